-- Give back the permits of one holder (a release, or a waiter undoing a grant it gave up on), and
-- grant the free permits to the waiters at the head of the line that they now admit (see
-- semaphore-grant-line: one message per waiter, which then holds them).
-- KEYS[1]  semaphore hash (see semaphore-acquire.lua)
-- KEYS[2]  holder leases (sorted set permit id -> lease deadline, server clock)
-- KEYS[3]  waiting line (list of permit ids)
-- KEYS[4]  waiter deadlines (sorted set permit id -> deadline, server clock)
-- KEYS[5]  channel on which freed permits are granted to (or wake) the waiters they admit
-- KEYS[6]  release record: this release's outcome, kept ARGV[3] ms so that a resent release
--          returns its first answer instead of "not held"
-- KEYS[7]  fence: the last fencing token handed out for this semaphore (grants take new ones)
-- ARGV[1]  permit id
-- ARGV[2]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[3]  how long to keep the release record, in ms
-- ARGV[4]  '1' when the caller is a waiter giving up: it also leaves the line (its grant, if a late
--          attempt or a release made one, is given back all the same, and goes on down the line)
-- ARGV[5]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[6]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- Returns  1 when permits were given back, nil when the permit id holds none (never granted, lost
--          by expiry, or released already); a waiter giving up gets 0 instead of nil
local semKey = KEYS[1]
local leasesKey = KEYS[2]
local lineKey = KEYS[3]
local deadlinesKey = KEYS[4]
local channel = KEYS[5]
local recordKey = KEYS[6]
local permitId = ARGV[1]
local publishCommand = ARGV[2]
local recordTtlMs = ARGV[3]
local leaving = ARGV[4] == '1'
local fenceKey = KEYS[7]
local grantCapMs = ARGV[5]
local fenceMemoryMs = ARGV[6]
local skipId = ''

-- The lean path (docs/architecture.md#lean-path): a holder's release with nobody in line. A release
-- deletes its holder's field, so one that finds it has not run before: no record to read.
local state = redis.call('hmget', semKey, 'o:' .. permitId, 'used')
local heldPermits = tonumber(state[1])
if heldPermits and not leaving and redis.call('exists', lineKey) == 0 then
  -- #include server-clock
  local deadline = tonumber(redis.call('zscore', leasesKey, permitId))
  local usedAfter = (tonumber(state[2]) or 0) - heldPermits
  if usedAfter <= 0 then
    -- Nobody holds and nobody waits: nothing of the semaphore stays (its fence aside).
    redis.call('del', semKey, leasesKey)
  else
    redis.call('hdel', semKey, 'o:' .. permitId, 'f:' .. permitId)
    redis.call('hset', semKey, 'used', usedAfter)
    redis.call('zrem', leasesKey, permitId)
  end
  -- Given back all the same when its lease had ended: it only was not "held" any more.
  if not (deadline and deadline > now) then
    return nil
  end
  redis.call('set', recordKey, 1, 'px', recordTtlMs)
  return 1
end

-- #include release-record-replay

-- #include server-clock

local outcome = 0
if leaving and redis.call('zscore', deadlinesKey, permitId) then
  -- Its id stays in the line list as a tombstone (semaphore-line-head): no LREM over the line.
  redis.call('zrem', deadlinesKey, permitId)
  redis.call('hdel', semKey, 'w:' .. permitId, 'l:' .. permitId, 's:' .. permitId)
end
local taken = tonumber(redis.call('hget', semKey, 'o:' .. permitId))
local deadline = tonumber(redis.call('zscore', leasesKey, permitId))
if taken and deadline and deadline > now then
  outcome = 1
end
if taken then
  -- An expired holder's permits went back (or go back now) all the same: it only is not "held".
  redis.call('hdel', semKey, 'o:' .. permitId, 'f:' .. permitId)
  redis.call('zrem', leasesKey, permitId)
  redis.call('hincrby', semKey, 'used', -taken)
end

-- #include semaphore-drop-expired
-- #include semaphore-line-head

-- #include semaphore-grant-line

-- #include semaphore-rearm

if outcome == 0 and not leaving then
  return nil
end
redis.call('set', recordKey, outcome, 'px', recordTtlMs)
return outcome
