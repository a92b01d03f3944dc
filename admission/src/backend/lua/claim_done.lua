-- ARGV: now, seq, settle ms
if not ep then return cjson.encode({lost = true}) end
redis.call('SADD', K.adm, ARGV[2])
redis.call('ZADD', K.pending, 'XX', now + tonumber(ARGV[3]), ARGV[2])
return cjson.encode({r = 'ok'})
