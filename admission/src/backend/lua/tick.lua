-- ARGV: now, opens_at_ms, rate_per_min, max_active, active sessions, offer_ms, hold, tolerance_ms,
-- priority share (thousandths), the lane carry's start,
-- pass_through ('1': offer everyone waiting, a batch per tick, with no pace and no cap here),
-- pass_batch
if not ep then return cjson.encode({lost = true}) end
local opened = now >= tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
local max_active = tonumber(ARGV[4])
local active = tonumber(ARGV[5])
local offer_ms = tonumber(ARGV[6])
local hold = ARGV[7] == '1'
local tol = tonumber(ARGV[8])
local permille = tonumber(ARGV[9])
local pass = ARGV[11] == '1'
local pass_batch = tonumber(ARGV[12])
if opened and redis.call('EXISTS', K.cur) == 0 then
  redis.call('SET', K.cur, redis.call('GET', K.seq) or '0')
end
local lapsed = redis.call('ZREMRANGEBYSCORE', K.offers, '-inf', now)
local credit = num(K.credit)
if lapsed > 0 then
  redis.call('INCRBY', K.lapsed, lapsed)
  -- A lapsed offer gives its place in the rate back (at most one second's worth), so
  -- no-shows do not slow the flow of buyers who do claim.
  credit = math.min(credit + lapsed, math.max(1, math.ceil(rate / 60)))
  redis.call('SET', K.credit, credit)
end
redis.call('ZREMRANGEBYSCORE', K.pending, '-inf', now)
local offered = {}
local served = num(K.served)
local seqn = num(K.seq)
local cur = num(K.cur)
local zc = redis.call('ZCARD', K.z)
local pzc = redis.call('ZCARD', K.pz)
local open = redis.call('ZCARD', K.offers) + redis.call('ZCARD', K.pending)
local grace = num(K.grace)
-- A grace that is over is forgotten, so a later clock step back cannot revive it.
if grace > 0 and now >= grace then redis.call('DEL', K.grace); grace = 0 end
local slots = max_active - active - open
local avail = zc + seqn - cur + pzc
-- After a loss, offers wait out the reconnect grace so returning tokens are not overtaken.
if opened and not hold and now >= grace and avail > 0 and (pass or (rate > 0 and slots > 0)) then
  local k, paced, interval, tat = 0, 0, 0, now
  if pass then
    -- Pass-through: the database judges the cap at claim, so everyone waiting is offered.
    k = math.min(avail, pass_batch)
  else
    -- GCRA on Redis's clock. tat is clamped to [now, now + tol + interval]: idle time earns no
    -- burst, and a clock that steps back (failover to a replica) cannot stall the meter.
    interval = 60000 / rate
    tat = tonumber(redis.call('GET', K.tat) or now)
    if tat < now then tat = now end
    if tat > now + tol + interval then
      -- Beyond any wait the meter itself could have set: the clock stepped back. Persist the
      -- clamp, or every later tick would find the same far-future tat.
      tat = now + tol + interval
      redis.call('SET', K.tat, string.format('%.3f', tat))
    end
    if tat <= now + tol then k = math.floor((now + tol - tat) / interval) + 1 end
    k = math.min(k, slots, avail)
    local extra = math.min(credit, slots - k, avail - k)
    if extra > 0 then redis.call('SET', K.credit, credit - extra) end
    paced = k
    k = k + extra
  end
  if k > 0 then
    local expires = now + offer_ms
    -- Split the offers between the lanes (as next_is_priority in backend/mod.rs): the carry
    -- grows by the share per offer and pays 1000 per priority offer, capped one offer ahead;
    -- a lane with nobody waiting gives its turn to the other.
    local carry = tonumber(redis.call('GET', K.pcarry) or ARGV[10])
    local gen = zc + seqn - cur
    local np = 0
    for _ = 1, k do
      carry = math.min(carry + permille, 1000 + permille)
      if pzc - np > 0 and (gen <= 0 or (permille > 0 and carry >= 1000)) then
        np = np + 1
        carry = math.max(carry - 1000, 0)
      else
        gen = gen - 1
      end
    end
    redis.call('SET', K.pcarry, string.format('%d', carry))
    if np > 0 then
      local popped = redis.call('ZPOPMIN', K.pz, np)
      for i = 1, #popped, 2 do
        offered[#offered + 1] = popped[i]
        redis.call('ZADD', K.offers, expires, popped[i])
      end
      -- The priority lane's frontier: the highest score it has offered (its pre-queue ranks
      -- lie in [0, 1), its places from PBASE), popped last.
      if #popped > 0 and tonumber(popped[#popped]) > tonumber(redis.call('GET', K.pf) or '-1') then
        redis.call('SET', K.pf, popped[#popped])
      end
      pzc = pzc - #popped / 2
    end
    local kg = k - np
    if zc > 0 and kg > 0 then
      local popped = redis.call('ZPOPMIN', K.z, math.min(kg, zc))
      local front = nil
      for i = 1, #popped, 2 do
        offered[#offered + 1] = popped[i]
        redis.call('ZADD', K.offers, expires, popped[i])
        -- Pre-queue ranks lie in [0, 1); returned FIFO places are scored by their sequence.
        if tonumber(popped[i + 1]) < 1 then front = popped[i + 1] end
      end
      if front and tonumber(front) > tonumber(redis.call('GET', K.pqf) or '-1') then
        redis.call('SET', K.pqf, front)
      end
      zc = zc - #popped / 2
    end
    while #offered < k do
      cur = cur + 1
      offered[#offered + 1] = string.format('%d', cur)
      redis.call('ZADD', K.offers, expires, string.format('%d', cur))
    end
    redis.call('SET', K.cur, string.format('%d', cur))
    served = redis.call('INCRBY', K.served, k)
    if not pass then redis.call('SET', K.tat, string.format('%.3f', tat + paced * interval)) end
    open = open + k
  end
end
-- Open offers exclude claims in flight: those are (or are about to be) active sessions.
return cjson.encode({offered = table.concat(offered, ','), served = served, cursor = cur,
  ahead = zc, seq = seqn, open_offers = redis.call('ZCARD', K.offers),
  claiming = redis.call('ZCARD', K.pending), lapsed = num(K.lapsed), epoch = ep, now = now,
  pq_through = redis.call('GET', K.pqf) or '', pseq = num(K.pseq), pahead = pzc,
  p_through = redis.call('GET', K.pf) or ''})
