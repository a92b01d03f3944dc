-- ARGV: now, seq, claim slot ms
if not ep then return cjson.encode({lost = true}) end
local m = ARGV[2]
local exp = redis.call('ZSCORE', K.offers, m)
if exp and tonumber(exp) > now then
  -- The slot stays counted (as a claim in flight) until the session is surely in the database.
  redis.call('ZREM', K.offers, m)
  redis.call('ZADD', K.pending, now + tonumber(ARGV[3]), m)
  return cjson.encode({r = 'moved'})
end
if redis.call('SISMEMBER', K.adm, m) == 1 or redis.call('ZSCORE', K.pending, m) then
  return cjson.encode({r = 'claimed'})
end
return cjson.encode({r = 'no'})
