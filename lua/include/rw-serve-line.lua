-- Whatever may have freed a read-write lock (or made room for readers) serves its line first: the
-- head writer or the readers at the head are admitted in this script (rw-grant-line). Says whether
-- the lock's channel should still be woken, as it is without a line: nobody was in line, or every
-- waiter there was dead and the lock is free.
-- Expects  rwKey, leasesKey, lineKey, deadlinesKey, seenKey, fenceKey, fenceMemoryMs,
--          publishCommand, grantCapMs (the waiter timeout), time, now
-- Defines  wakeChannel

local wakeChannel = true
if redis.call('exists', lineKey) == 1 then
  local callerEntry = ''
  -- #include rw-grant-line
  wakeChannel = redis.call('exists', rwKey) == 0
end
