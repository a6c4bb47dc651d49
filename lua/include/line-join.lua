-- An attempt with a wait that did not get the lock joins its line (once: a retry or a resent
-- attempt only refreshes its deadline and its last-attempt record), for the reentrant, fair and
-- read-write locks. One owner stands in line once (line-owner-entry). sleepsForMs is how long the
-- waiter may sleep without attempting: the TTL it is told, or 0 for a fair waiter (it heartbeats).
-- An attempt made once its waiter's seat was subscribed says so (attemptStamp ends in ' s'); if
-- Redis agrees (somebody listens on the waiter's channel here, line-seat-heard), its last-attempt
-- record ends in ' s': only such an entry may be judged dead by its channel going unheard
-- (line-live-head). A newcomer joins before its seat is subscribed: its record has no mark, so a
-- grant never skips it for being unheard (docs/hand-off-protocol.md#dead-waiters).
-- Expects  lineKey, deadlinesKey, seenKey, myEntry, ownerId, attemptStamp (see grant-timing),
--          waiterTimeoutMs, now, sleepsForMs, channel (the lock's channel), publishCommand
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
  local sentStamp, seatClaimed = string.match(attemptStamp, '^(%S*) (s)$')
  local seenRecord = now .. ' ' .. (sentStamp or attemptStamp)
  if seatClaimed then
    -- #include line-waiter-channel
    -- #include line-seat-heard
    local joinedOwner, joinedKind = string.match(myEntry, '^(%S+) %S+ %d+ ([pfrw])$')
    if joinedOwner and seatHeard(joinedKind, joinedOwner) then
      seenRecord = seenRecord .. ' s'
    end
  end
  redis.call('hset', seenKey, myEntry, seenRecord)
end
-- #include line-rearm
