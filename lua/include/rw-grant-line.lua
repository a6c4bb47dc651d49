-- A read-write lock with waiters in line may admit some now (it was freed, its writer downgraded, a
-- holder's lease ran out, a waiter left): admit them in line order inside this script, the head
-- writer alone (only into a free lock) or every consecutive reader at the head together (into a
-- free or read-held lock), and name each in a grant message on the lock's channel. Nobody gets in
-- between the release and the waiters' wake-up, so overlapping readers cannot starve a writer and a
-- hand-off costs one trip. Each grant starts with a short lease (the waiter's own, at most the
-- waiter timeout), which the waiter makes its full lease once it hears of it (its renewal call).
-- Gone entries before the head (tombstones, expired, a dead client's) are popped with a bounded
-- budget (line-live-head). A grant to a writer is recorded (field '~grant' of the last-attempts
-- hash) until that writer releases or gives it back: found with another writer or none, the writer
-- failed to take or keep it, and its client's entries are skipped together (line-failed-grantee).
-- A grant to the caller's own entry (callerEntry) publishes nothing: the caller learns it from its reply.
-- Expects  rwKey, leasesKey, lineKey, deadlinesKey, seenKey, fenceKey, fenceMemoryMs,
--          publishCommand, grantCapMs (the waiter timeout), callerEntry ('' when none), time, now
-- Defines  nothing

-- #include line-drop-expired
local lastWriterGrant = redis.call('hget', seenKey, '~grant')
if lastWriterGrant and redis.call('hget', rwKey, 'writer') ~= lastWriterGrant then
  -- #include line-failed-grantee
end
local grantedAny = false
local channel = rwKey .. ':channel'
-- #include line-waiter-channel
-- #include line-seat-heard
local noticeMs = 0
local grantedOwner = ''
local headBudget = 500
while true do
  local rwMode = redis.call('hget', rwKey, 'mode')
  -- Write-held: nobody can be admitted, so nobody is judged either (line-live-head asks whether the
  -- head's channel is heard: only where a grant may follow).
  if rwMode == 'write' then
    break
  end
  -- #include line-live-head
  if not entry then
    break
  end
  -- #include line-entry
  if entryOwner and entryKind == 'w' and rwMode then
    -- Readers hold it: the head writer waits for them (and the readers behind it wait for it).
    break
  end
  redis.call('lpop', lineKey)
  redis.call('zrem', deadlinesKey, entry)
  local seenRecord = redis.call('hget', seenKey, entry)
  redis.call('hdel', seenKey, entry)
  -- An entry that is not a read-write waiter's (no parts, or another kind) is dropped: nobody
  -- would take a grant for it.
  if entryOwner and (entryKind == 'w' or entryKind == 'r') then
    local grantMs = math.min(tonumber(entryLease), tonumber(grantCapMs))
    local grantToken = '0'
    if entryKind == 'w' then
      -- #include fence-token
      redis.call('hset', rwKey, 'mode', 'write', 'writer', entryOwner, 'writes', 1, 'rq:' .. entryOwner, entryRequest,
        'handed:rq:' .. entryOwner, entryRequest, 'fence', tokenText)
      redis.call('hset', seenKey, '~grant', entryOwner)
      grantToken = tokenText
    else
      if not rwMode then
        redis.call('hset', rwKey, 'mode', 'read')
      end
      -- A first read hold records when it started (see rw-read-acquire.lua), in the same call.
      -- A read's grant message carries its episode (the owner's since:<owner id>) where a write's carries its token.
      if redis.call('hincrby', rwKey, 'read:' .. entryOwner, 1) == 1 then
        redis.call('hset', rwKey, 'rq:' .. entryOwner, entryRequest, 'handed:rq:' .. entryOwner, entryRequest, 'since:' .. entryOwner, now)
        grantToken = tostring(now)
      else
        redis.call('hset', rwKey, 'rq:' .. entryOwner, entryRequest, 'handed:rq:' .. entryOwner, entryRequest)
        grantToken = redis.call('hget', rwKey, 'since:' .. entryOwner) or '0'
      end
    end
    -- GT: never shortens a longer lease the owner may hold already.
    redis.call('zadd', leasesKey, 'gt', now + grantMs, entryOwner)
    grantedAny = true
    if entry ~= callerEntry then
      -- #include grant-timing
      redis.call(publishCommand, waiterChannelOf(entryKind, entryOwner), 'granted:' .. entry .. ' ' .. grantToken .. ' ' .. grantTiming .. ' ' .. grantMs)
    end
    noticeMs = math.max(noticeMs, grantMs)
    grantedOwner = entryOwner
  end
end
if grantedAny then
  -- #include rw-expire-with-longest-lease
  -- #include line-next-notice
end
-- #include line-rearm
