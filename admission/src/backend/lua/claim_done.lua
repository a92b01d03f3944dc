-- ARGV: now, seq
if not ep then return cjson.encode({lost = true}) end
redis.call('SADD', K.adm, ARGV[2])
return cjson.encode({r = 'ok'})
