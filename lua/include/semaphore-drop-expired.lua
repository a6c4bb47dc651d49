-- Holders of a semaphore whose lease ended (they crashed) give their permits back; waiters whose
-- deadline passed leave the line: their deadline and request go, their id stays in the line list
-- as a tombstone (popped when it reaches the head: semaphore-line-head). No LREM over the line,
-- and at most 1000 holders and 250 waiters per script, oldest first: a script's work stays bounded
-- whatever the semaphore holds (docs/hand-off-protocol.md#bounded-work-in-redis); the rest go in the scripts
-- that follow, and nothing is granted to a waiter whose deadline passed (semaphore-grant-line).
-- Expects  semKey, leasesKey, lineKey, deadlinesKey, now
-- Defines  expiredHolders, expiredWaiters (the permit ids dropped), freed (the permits given back)

local expiredHolders = redis.call('zrangebyscore', leasesKey, '-inf', now, 'limit', 0, 1000)
local freed = 0
for _, id in ipairs(expiredHolders) do
  freed = freed + (tonumber(redis.call('hget', semKey, 'o:' .. id)) or 0)
  redis.call('hdel', semKey, 'o:' .. id, 'f:' .. id)
  redis.call('zrem', leasesKey, id)
end
if freed > 0 then
  redis.call('hincrby', semKey, 'used', -freed)
end
local expiredWaiters = redis.call('zrangebyscore', deadlinesKey, '-inf', now, 'limit', 0, 250)
for _, id in ipairs(expiredWaiters) do
  redis.call('zrem', deadlinesKey, id)
  redis.call('hdel', semKey, 'w:' .. id, 'l:' .. id, 's:' .. id)
end
