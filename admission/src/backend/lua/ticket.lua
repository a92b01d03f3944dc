-- ARGV: now, seq, pre ('1'|'0'), score, the token's epoch, never offered ('1': the database's
-- log of offers holds none for this place)
if not ep then return cjson.encode({lost = true}) end
local m = ARGV[2]
local seq = tonumber(m)
local priority = seq >= PBASE
-- A place waits in its lane's set, scored by its rank (pre-queue) or its number (a priority
-- place, or a FIFO place a token brought back after a loss); ahead counts by that score.
local pscore = ARGV[3] == '1' and ARGV[4] or m
local line = priority and K.pz or K.z
if redis.call('ZSCORE', line, m) then
  return cjson.encode({s = 'waiting', ahead = redis.call('ZCOUNT', line, '-inf', '(' .. pscore), now = now})
end
if ARGV[3] == '0' and not priority then
  local cur = num(K.cur)
  if seq > cur then
    return cjson.encode({s = 'waiting', ahead = redis.call('ZCARD', K.z) + seq - cur - 1, now = now})
  end
end
local exp = redis.call('ZSCORE', K.offers, m)
if exp and tonumber(exp) > now then
  return cjson.encode({s = 'offered', exp = tonumber(exp), now = now})
end
if redis.call('SISMEMBER', K.adm, m) == 1 or redis.call('ZSCORE', K.pending, m) then
  return cjson.encode({s = 'claimed', now = now})
end
-- A ticket behind the frontiers saved before a loss was offered then (and lapsed, or was
-- claimed: the database knows), unless its page slept through an earlier loss while the line
-- moved past it: the database's log of offers decides (ARGV[6] = '1': it holds none).
local function behind_floor()
  if priority then
    -- The priority lane's frontier is a score in its own set, ranks and places alike.
    local p = redis.call('HGET', K.floor, 'p')
    return p ~= false and tonumber(pscore) <= tonumber(p)
  end
  if ARGV[3] == '1' then
    local pq = redis.call('HGET', K.floor, 'pq')
    return pq ~= false and tonumber(ARGV[4]) <= tonumber(pq)
  end
  return seq <= tonumber(redis.call('HGET', K.floor, 'fifo') or '0')
end
if ARGV[5] ~= ep and redis.call('SISMEMBER', K.rr, m) == 0 then
  if ARGV[6] ~= '1' and behind_floor() then return cjson.encode({s = 'behind', now = now}) end
  redis.call('SADD', K.rr, m)
  -- Redis lost this place; the token brings it back at its old relative order, ahead of every
  -- arrival since the loss (their sequence numbers start past the checkpoint's margin).
  redis.call('ZADD', line, pscore, m)
  -- While tokens keep coming back, the grace stays open 5 s past the latest: a crowd slowed
  -- by the reconnect herd (503s, Redis just restarted) is not overtaken by its own tail.
  local grace = num(K.grace)
  if grace > now and grace < now + 5000 then
    redis.call('SET', K.grace, string.format('%d', now + 5000), 'KEEPTTL')
  end
  return cjson.encode({s = 'waiting', ahead = redis.call('ZCOUNT', line, '-inf', '(' .. pscore), now = now})
end
return cjson.encode({s = 'lapsed', now = now})
