-- Every script gets the same keys, all under one {hash tag} (one Cluster slot per event).
local K = {ep = KEYS[1], seq = KEYS[2], cur = KEYS[3], z = KEYS[4], offers = KEYS[5],
  pending = KEYS[6], adm = KEYS[7], rr = KEYS[8], tk = KEYS[9], served = KEYS[10],
  tat = KEYS[11], lapsed = KEYS[12], grace = KEYS[13], credit = KEYS[14], pqf = KEYS[15],
  floor = KEYS[16], pseq = KEYS[17], pz = KEYS[18], pcarry = KEYS[19], pf = KEYS[20]}
-- Priority places are numbered from 2^50 (exact in a double; always written with %d), so the
-- general FIFO range (cur, seq] never holds one.
local PBASE = 1125899906842624
-- One clock for every instance: Redis TIME, unless a test steers it through ARGV[1].
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function num(k) return tonumber(redis.call('GET', k) or '0') end
local ep = redis.call('GET', K.ep)
