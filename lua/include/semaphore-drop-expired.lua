-- Holders of a semaphore whose lease ended (they crashed) give their permits back; waiters whose
-- deadline passed leave the line.
-- Expects  semKey, leasesKey, lineKey, deadlinesKey, now
-- Defines  expiredHolders, expiredWaiters (the permit ids dropped), freed (the permits given back)

local expiredHolders = redis.call('zrangebyscore', leasesKey, '-inf', now)
local freed = 0
for _, id in ipairs(expiredHolders) do
  freed = freed + (tonumber(redis.call('hget', semKey, 'o:' .. id)) or 0)
  redis.call('hdel', semKey, 'o:' .. id, 'f:' .. id)
  redis.call('zrem', leasesKey, id)
end
if freed > 0 then
  redis.call('hincrby', semKey, 'used', -freed)
end
local expiredWaiters = redis.call('zrangebyscore', deadlinesKey, '-inf', now)
for _, id in ipairs(expiredWaiters) do
  redis.call('lrem', lineKey, 1, id)
  redis.call('zrem', deadlinesKey, id)
  redis.call('hdel', semKey, 'w:' .. id, 'l:' .. id, 's:' .. id)
end
