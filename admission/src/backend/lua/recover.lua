-- ARGV: now, new epoch, join seq floor, served floor, grace ms, opens_at_ms, FIFO served
-- through, pre-queue served through ('' = none), priority lane served through ('' = none)
-- Idempotent across instances: the first to run it after a loss sets the floors.
if ep then return cjson.encode({created = false}) end
redis.call('SET', K.seq, ARGV[3])
-- The checkpoint's join count covers both lanes, so the priority lane restarts past it too.
redis.call('SET', K.pseq, ARGV[3])
redis.call('SET', K.served, ARGV[4])
if tonumber(ARGV[5]) > 0 then
  -- Returning tokens may keep the grace open longer (ticket.lua); the key's expiry, six graces
  -- (a minute by default), caps that, so offers always resume.
  redis.call('SET', K.grace, string.format('%d', now + tonumber(ARGV[5])), 'PX', 6 * tonumber(ARGV[5]))
end
if now >= tonumber(ARGV[6]) then redis.call('SET', K.cur, ARGV[3]) end
-- The checkpointed frontiers: a returning ticket behind them was offered before the loss.
redis.call('HSET', K.floor, 'fifo', ARGV[7])
if ARGV[8] ~= '' then
  redis.call('HSET', K.floor, 'pq', ARGV[8])
  redis.call('SET', K.pqf, ARGV[8])
end
if ARGV[9] ~= '' then
  redis.call('HSET', K.floor, 'p', ARGV[9])
  redis.call('SET', K.pf, ARGV[9])
end
redis.call('SET', K.ep, ARGV[2])
return cjson.encode({created = true})
