-- An attempt with a wait that did not get the lock joins its line (once: a retry or a resent
-- attempt only refreshes its deadline and its last-attempt record), for the reentrant, fair and
-- read-write locks. One owner stands in line once (line-owner-entry). sleepsForMs is how long the
-- waiter may sleep without attempting: the TTL it is told, or 0 for a fair waiter (it heartbeats).
-- Expects  lineKey, deadlinesKey, seenKey, myEntry, ownerId, attemptStamp (see grant-timing),
--          waiterTimeoutMs, now, sleepsForMs
-- Defines  nothing

-- #include line-drop-expired
-- A client that attempts is alive: a dead mark (line-failed-grantee) no longer skips its entries.
local myClient = string.match(ownerId, '^(%S+):%d+$')
if myClient then
  redis.call('hdel', seenKey, '~dead:' .. myClient)
end
-- #include line-owner-entry
if ownEntry == myEntry then
  if not redis.call('zscore', deadlinesKey, myEntry) then
    redis.call('rpush', lineKey, myEntry)
    redis.call('hset', seenKey, ownerField, myEntry)
  end
  -- A waiter that stops retrying (it crashed) leaves the line once it missed a whole sleep and timeout.
  redis.call('zadd', deadlinesKey, now + waiterTimeoutMs + sleepsForMs, myEntry)
  redis.call('hset', seenKey, myEntry, now .. ' ' .. attemptStamp)
end
-- #include line-rearm
