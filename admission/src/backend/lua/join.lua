-- ARGV: now, opens_at_ms, idempotency key ('' = none), pre-queue score
if not ep then return cjson.encode({lost = true}) end
if ARGV[3] ~= '' then
  local prev = redis.call('HGET', K.tk, ARGV[3])
  if prev then
    local seq, pre = string.match(prev, '(%d+):(%d)')
    return cjson.encode({seq = tonumber(seq), pre = (pre == '1'), ep = ep, now = now})
  end
end
local pre = now < tonumber(ARGV[2])
if (not pre) and redis.call('EXISTS', K.cur) == 0 then
  -- First arrival after opening: FIFO places start after the pre-queue's.
  redis.call('SET', K.cur, redis.call('GET', K.seq) or '0')
end
local seq = redis.call('INCR', K.seq)
if pre then redis.call('ZADD', K.z, ARGV[4], seq) end
if ARGV[3] ~= '' then redis.call('HSET', K.tk, ARGV[3], seq .. ':' .. (pre and '1' or '0')) end
return cjson.encode({seq = seq, pre = pre, ep = ep, now = now})
