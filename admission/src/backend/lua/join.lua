-- ARGV: now, opens_at_ms, idempotency key ('' = none), pre-queue score, priority ('1'|'0')
if not ep then return cjson.encode({lost = true}) end
if ARGV[3] ~= '' then
  local prev = redis.call('HGET', K.tk, ARGV[3])
  if prev then
    local seq, pre = string.match(prev, '(%d+):(%d)')
    local n = tonumber(seq)
    -- A priority place is told by its lane's count (JSON numbers past 2^50 lose digits).
    if n >= PBASE then
      return cjson.encode({seq = n - PBASE, p = true, pre = (pre == '1'), ep = ep, now = now})
    end
    return cjson.encode({seq = n, pre = (pre == '1'), ep = ep, now = now})
  end
end
local pre = now < tonumber(ARGV[2])
if ARGV[5] == '1' then
  -- The priority lane: its own count; pre-queue arrivals by their seeded rank, later ones by
  -- their place number (past every rank), so the lane is shuffled, then FIFO.
  local n = redis.call('INCR', K.pseq)
  local member = string.format('%d', PBASE + n)
  redis.call('ZADD', K.pz, pre and ARGV[4] or member, member)
  if ARGV[3] ~= '' then redis.call('HSET', K.tk, ARGV[3], member .. ':' .. (pre and '1' or '0')) end
  return cjson.encode({seq = n, p = true, pre = pre, ep = ep, now = now})
end
if (not pre) and redis.call('EXISTS', K.cur) == 0 then
  -- First arrival after opening: FIFO places start after the pre-queue's.
  redis.call('SET', K.cur, redis.call('GET', K.seq) or '0')
end
local seq = redis.call('INCR', K.seq)
if pre then redis.call('ZADD', K.z, ARGV[4], seq) end
if ARGV[3] ~= '' then redis.call('HSET', K.tk, ARGV[3], seq .. ':' .. (pre and '1' or '0')) end
return cjson.encode({seq = seq, pre = pre, ep = ep, now = now})
