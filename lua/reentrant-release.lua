-- Release one hold of the reentrant (or fair) lock; the last one hands the lock to the first live
-- waiter in line. A hold nobody lined up behind publishes nothing: every waiter of this version
-- stands in the line (docs/hand-off-protocol.md), so there is nobody to wake; one that had a line
-- that is gone wakes the lock's channel (a waiter the line dropped while it was alive).
-- KEYS[1]  lock hash (see reentrant-acquire.lua); field '<owner id>:rls' is set once a release of
--          this owner left holds behind (a release of that hold's episode may then be a resend)
-- KEYS[2]  release record: the outcome of this request, kept for ARGV[2] ms so that a resent
--          release returns its first answer instead of "not held"
-- KEYS[3]  waiting line, KEYS[4] waiter deadlines, KEYS[5] waiters' last attempts, KEYS[6] fence
--          (KEYS[2] to KEYS[5] of reentrant-acquire.lua)
-- ARGV[1]  owner id
-- ARGV[2]  how long to keep the release record, in ms
-- ARGV[3]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[4]  unlock message (the line's head budget ran out: see line-grant-head)
-- ARGV[5]  '' for a plain release; an acquire request id to release only the hold that request
--          granted (an acquisition abandoned while its reply was unknown: no phantom hold remains)
-- ARGV[6]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[7]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[8]  the fencing token of the hold being released, as the caller holds it ('' when unknown):
--          a plain release of a hold whose token is not the lock's is of an episode that ended
-- Returns  nil when the owner does not hold the lock (or that request granted nothing),
--          0 when holds remain (the lease is left as it is: the remaining holds' leases are in
--          it), 1 when released
local lockKey = KEYS[1]
local recordKey = KEYS[2]
local lineKey = KEYS[3]
local deadlinesKey = KEYS[4]
local seenKey = KEYS[5]
local fenceKey = KEYS[6]
local ownerId = ARGV[1]
local recordTtlMs = ARGV[2]
local publishCommand = ARGV[3]
local unlockMessage = ARGV[4]
local grantedBy = ARGV[5]
local grantCapMs = ARGV[6]
local fenceMemoryMs = ARGV[7]
local heldToken = ARGV[8] or ''
local callerEntry = ''
local requestField = ownerId .. ':rq'
-- The request a line handed the lock to (see line-grant-head)
local handedField = ownerId .. ':handed:rq'
local partialField = ownerId .. ':rls'
local holdKey = lockKey

local holds
-- Whether a line ever stood behind this hold (field '~line', set by a waiter that joined it or the
-- grant that handed it over): a hold without it has nobody to hand the lock to.
local lineBehind
if grantedBy == '' then
  local state = redis.call('hmget', lockKey, ownerId, 'fence', partialField, '~line')
  holds = tonumber(state[1])
  lineBehind = state[4]
  -- The last hold of the episode the caller named, and no release of that episode has left holds
  -- behind: this release has not run before (a release that ran either ended the episode, and a
  -- new one has a new token, or left holds and set partialField), so no record is read.
  local firstRun = holds == 1 and heldToken ~= '' and state[2] == heldToken and not state[3]
  if not firstRun then
    -- #include release-record-replay
    if heldToken ~= '' and state[2] and state[2] ~= heldToken then
      -- That hold's episode ended (released, lost, or taken over): never a hold of a later one.
      holds = nil
    end
  end
else
  -- #include release-undo-check
  local state = redis.call('hmget', lockKey, ownerId, '~line')
  holds = tonumber(state[1])
  lineBehind = state[2]
end
if not holds then
  return nil
end
local outcome
if holds > 1 then
  redis.call('hset', lockKey, ownerId, holds - 1, partialField, 1)
  outcome = 0
else
  redis.call('del', lockKey)
  if lineBehind then
    if redis.call('exists', lineKey) == 1 then
      -- The grantee released: its grant was taken (see line-failed-grantee).
      if redis.call('hget', seenKey, '~grant') == ownerId then
        redis.call('hdel', seenKey, '~grant')
      end
      -- #include line-grant-head
    else
      -- A line stood behind this hold and is gone: waiters it dropped while alive (their client
      -- marked dead after a missed grant, a deadline passed while they stalled) sleep out the TTL
      -- they were told unless woken here. All of them ('all': WAKE_ALL, every waiter of a process):
      -- the one that takes the lock takes it without a line, so its release would wake nobody.
      redis.call(publishCommand, lockKey .. ':channel', 'all')
    end
  end
  outcome = 1
end
if grantedBy == '' then
  redis.call('set', recordKey, outcome, 'px', recordTtlMs)
end
return outcome
