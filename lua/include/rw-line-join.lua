-- An attempt with a wait that did not get the read-write lock joins its line (once: a retry or a
-- resent attempt only refreshes its deadline and its last-attempt time).
-- Expects  lineKey, deadlinesKey, seenKey, myEntry, ownerId, attemptStamp (see grant-timing), waiterTimeoutMs, now,
--          ttl (the lock's PTTL: the waiter sleeps that long at most)
-- Defines  nothing

-- #include line-drop-expired
-- A client that attempts is alive: a dead mark (line-failed-grantee) no longer skips its entries.
local myClient = string.match(myEntry, '^(%S+):%d+ ')
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
  redis.call('zadd', deadlinesKey, now + waiterTimeoutMs + math.max(ttl, 0), myEntry)
  redis.call('hset', seenKey, myEntry, now .. ' ' .. attemptStamp)
end
-- #include line-rearm
