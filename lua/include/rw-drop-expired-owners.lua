-- Owners of a read-write lock whose lease ran out (a crashed reader or writer, or the caller itself
-- if its own lease ran out) lose their holds; everyone else keeps theirs.
-- Expects  rwKey, leasesKey, now
-- Defines  nothing

for _, expiredId in ipairs(redis.call('zrangebyscore', leasesKey, '-inf', now)) do
  redis.call('hdel', rwKey, 'read:' .. expiredId, 'since:' .. expiredId, 'rq:' .. expiredId, 'handed:rq:' .. expiredId)
  if redis.call('hget', rwKey, 'writer') == expiredId then
    redis.call('hdel', rwKey, 'writer', 'writes')
  end
  redis.call('zrem', leasesKey, expiredId)
end
