-- The lock is free (just released, or its holder's lease ran out): hand it to the first live waiter
-- in line, inside this script, and tell that waiter it holds it. Nobody else can take it between
-- the release and the waiter's wake-up, so a holder that releases and asks again in a loop cannot
-- starve a waiter in another process, and the hand-off costs one trip (release -> Redis -> waiter).
-- The grant's lease is short (the waiter's own lease, at most the waiter timeout): a waiter that
-- died before its wake-up blocks the others no longer than that; the waiter makes it its full lease
-- once it hears of the grant. With nobody in line, the lock's channel wakes whoever waits there.
-- A grant to the caller's own entry (callerEntry: an attempt that finds the lock free with itself
-- first in line) publishes nothing: the caller learns it from its reply.
-- The first live waiter is found with a bounded budget (line-live-head): when gone entries fill it,
-- nobody is granted by this script and the lock's channel is woken, so the waiters' attempts go on
-- clearing the line (an attempt that finds the lock free answers a 50 ms retry).
-- The grant is recorded (field '~grant' = the grantee's owner id) until the grantee releases or
-- gives it back: a later script that finds the lock free with it still there skips all of the
-- grantee's client's entries (line-failed-grantee).
-- Expects  lockKey, lineKey, deadlinesKey, seenKey, fenceKey, fenceMemoryMs, publishCommand,
--          unlockMessage, grantCapMs (the waiter timeout), callerEntry ('' when none)
-- Defines  time, now (server clock), expired, grantedTo (the entry now holding the lock, or false),
--          entry, headBlocked, headBudget, skippedUnheard

-- #include server-clock
-- #include line-drop-expired
-- #include line-failed-grantee
local grantedTo = false
local channel = lockKey .. ':channel'
-- #include line-waiter-channel
-- #include line-seat-heard
local headBudget = 500
-- #include line-live-head
if entry then
  -- #include line-entry
  if entryOwner then
    redis.call('lpop', lineKey)
    redis.call('zrem', deadlinesKey, entry)
    local seenRecord = redis.call('hget', seenKey, entry)
    redis.call('hdel', seenKey, entry)
    local grantMs = math.min(tonumber(entryLease), tonumber(grantCapMs))
    -- #include fence-token
    -- ':handed:rq' keeps the handed request apart: a re-entry of the same owner overwrites ':rq'.
    -- '~line': a line stood behind this hold (see reentrant-release.lua).
    redis.call('hset', lockKey, entryOwner, 1, entryOwner .. ':rq', entryRequest, entryOwner .. ':handed:rq', entryRequest,
      'fence', tokenText, '~line', 1)
    redis.call('pexpire', lockKey, grantMs)
    redis.call('hset', seenKey, '~grant', entryOwner)
    if entry ~= callerEntry then
      -- #include grant-timing
      redis.call(publishCommand, waiterChannelOf(entryKind, entryOwner), 'granted:' .. entry .. ' ' .. tokenText .. ' ' .. grantTiming .. ' ' .. grantMs)
    end
    local noticeMs = grantMs
    local grantedOwner = entryOwner
    -- #include line-next-notice
    grantedTo = entry
  else
    -- A waiter of an older version: woken on its own channel, it tries by itself.
    redis.call(publishCommand, channel .. ':' .. entry, unlockMessage)
  end
else
  -- 'all' (every waiter of each process) when an entry was skipped for its channel going unheard.
  -- Not for the skipped process itself (its lock channel is on the same unheard connection: its
  -- reconnect wakes its waiters), but for other processes' waiters the line no longer holds (dropped
  -- while they stalled), which would otherwise sleep out the TTL they were told.
  redis.call(publishCommand, channel, skippedUnheard and 'all' or unlockMessage)
end
-- Only entries left the line: its keys' TTL (the latest deadline's) can only be longer than
-- needed, by at most the deadline of an entry that left. A line without a live entry (empty, or
-- only tombstones) goes at once.
if redis.call('exists', lineKey) == 0 or redis.call('zcard', deadlinesKey) == 0 then
  redis.call('del', lineKey, deadlinesKey, seenKey)
end
