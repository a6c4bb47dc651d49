-- Take permits of a semaphore, or wait for them in its FIFO line.
-- KEYS[1]  semaphore hash: field permits = the limit (kept while the semaphore is in use), used =
--          permits held, o:<permit id> = permits that holder took, f:<permit id> = its fencing token,
--          w:<permit id> = permits a waiter in line asks for, l:<permit id> = its lease in ms (the
--          grant a release makes it is that long at most), s:<permit id> = when it last attempted
--          ('<ms, server clock> <send stamp>'; see grant-timing)
-- KEYS[2]  holder leases: sorted set permit id -> lease deadline in ms on the server clock; a holder
--          whose deadline passed (it crashed) gives its permits back at the next script run
-- KEYS[3]  waiting line: list of permit ids, first come first
-- KEYS[4]  waiter deadlines: sorted set permit id -> deadline in ms on the server clock, refreshed by
--          each attempt; a waiter that stops refreshing it (it crashed) leaves the line once it passes
-- KEYS[5]  fence: the last fencing token handed out for this semaphore (see reentrant-acquire.lua)
-- KEYS[6]  channel on which freed permits are granted to (or wake) the waiters they admit
-- ARGV[1]  permits: the limit the caller expects
-- ARGV[2]  take: how many permits the caller asks for (1 <= take <= permits)
-- ARGV[3]  lease in ms (a fraction is rounded up: PEXPIRE takes whole ms)
-- ARGV[4]  permit id (one per acquisition: an owner id)
-- ARGV[5]  waiter timeout in ms: a waiter's deadline is now + this; also the longest lease a
--          grant to a waiter starts with
-- ARGV[6]  '1' to join (or keep a place in) the line when not granted; '0' for a single attempt
--          that never joins
-- ARGV[7]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[8]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[9]  this attempt's send stamp (µs, the waiter's monotonic clock; see grant-timing)
-- Returns  {token} when granted (a resent attempt that was granted already, or a waiter whose
--          permits a release granted, gets the same token, its lease now the full ARGV[3]);
--          {'limit', stored limit} when the semaphore is in use with another limit;
--          otherwise how long the caller may sleep before retrying, in ms
local semKey = KEYS[1]
local leasesKey = KEYS[2]
local lineKey = KEYS[3]
local deadlinesKey = KEYS[4]
local fenceKey = KEYS[5]
local channel = KEYS[6]
local permits = tonumber(ARGV[1])
local take = tonumber(ARGV[2])
local leaseMs = math.ceil(tonumber(ARGV[3]))
local permitId = ARGV[4]
local waiterTimeoutMs = tonumber(ARGV[5])
local joinLine = ARGV[6] == '1'
local publishCommand = ARGV[7]
local fenceMemoryMs = ARGV[8]
local attemptStamp = ARGV[9] or ''

-- A resent attempt (ioredis replays unanswered commands after a reconnect) that was granted
-- already, or a waiter a release granted permits to while this attempt was on its way (it missed
-- or has not yet heard the grant message): it holds them, on the full lease from now on (this is
-- its confirmation). A grant whose lease ended is not returned: the permits went back.
local state = redis.call('hmget', semKey, 'f:' .. permitId, 'permits', 'used')
local heldToken = state[1]
if heldToken then
  -- #include server-clock
  local deadline = tonumber(redis.call('zscore', leasesKey, permitId))
  if deadline and deadline > now then
    redis.call('zadd', leasesKey, math.max(deadline, now + leaseMs), permitId)
    if redis.call('pttl', semKey) < leaseMs then
      redis.call('pexpire', semKey, leaseMs)
      redis.call('pexpire', leasesKey, leaseMs)
    end
    return { tonumber(heldToken) }
  end
end

local stored = tonumber(state[2])
if stored and stored ~= permits then
  return { 'limit', stored }
end

-- #include server-clock

-- The lean path (docs/architecture.md#lean-path): nobody in line, and the permits are free without
-- taking back those of a holder whose lease ended: granted here, in a few calls. Anything else goes
-- the whole way below (expired holders and waiters dropped, the line's order kept).
local usedBefore = tonumber(state[3]) or 0
if take <= permits - usedBefore and redis.call('exists', lineKey) == 0 then
  -- #include fence-token
  redis.call('hset', semKey, 'permits', permits, 'o:' .. permitId, take, 'f:' .. permitId, tokenText, 'used', usedBefore + take)
  redis.call('zadd', leasesKey, now + leaseMs, permitId)
  -- The keys live as long as the latest lease: this one when nobody else holds (the line is gone),
  -- otherwise the longer of it and what they have (PEXPIRE's GT needs Redis 7: compared here).
  if usedBefore == 0 or redis.call('pttl', semKey) < leaseMs then
    redis.call('pexpire', semKey, leaseMs)
    redis.call('pexpire', leasesKey, leaseMs)
  end
  return { token }
end

-- #include semaphore-drop-expired
-- #include semaphore-line-head
local changed = #expiredHolders > 0 or #expiredWaiters > 0 or headPopped > 0

local used = tonumber(redis.call('hget', semKey, 'used')) or 0
local free = permits - used

-- Strict FIFO: the caller fits when its request and those of every waiter ahead of it (or of the
-- whole line, for a caller not in it) fit in the free permits. Nobody passes a waiter that asks
-- for more, so a caller asking for several permits is never starved by callers asking for one.
local fits = take <= free
if fits and free > 0 then
  local ahead = 0
  local range = redis.call('lrange', lineKey, 0, free - 1)
  local found = false
  for _, id in ipairs(range) do
    if id == permitId then
      found = true
      break
    end
    -- A tombstone or a waiter whose deadline passed (semaphore-drop-expired) asks for nothing.
    local waitsUntil = tonumber(redis.call('zscore', deadlinesKey, id))
    if waitsUntil and waitsUntil > now then
      ahead = ahead + (tonumber(redis.call('hget', semKey, 'w:' .. id)) or 1)
    end
    if ahead + take > free then
      fits = false
      break
    end
  end
  -- Only the first `free` ids were read: a caller behind all of them (gone ones among them) may
  -- not pass whoever stands after them.
  if fits and not found and #range >= free then
    fits = false
  end
end

local function rearm()
  -- #include semaphore-rearm
end

local reply
local leftLine = false
if fits then
  if redis.call('zscore', deadlinesKey, permitId) then
    redis.call('lrem', lineKey, 1, permitId)
    redis.call('zrem', deadlinesKey, permitId)
    redis.call('hdel', semKey, 'w:' .. permitId, 'l:' .. permitId, 's:' .. permitId)
    leftLine = true
  end
  -- #include fence-token
  redis.call('hset', semKey, 'permits', permits, 'o:' .. permitId, take, 'f:' .. permitId, tokenText)
  redis.call('hincrby', semKey, 'used', take)
  redis.call('zadd', leasesKey, now + leaseMs, permitId)
  free = free - take
  reply = { token }
else
  if joinLine then
    -- Once in line, a retry (or a resent attempt) only refreshes the deadline: never queued twice.
    if not redis.call('zscore', deadlinesKey, permitId) then
      redis.call('rpush', lineKey, permitId)
    end
    redis.call('zadd', deadlinesKey, now + waiterTimeoutMs, permitId)
    -- Each attempt writes its request again (one call, needed anyway for s:): a hash that vanished
    -- meanwhile (the testing kit's loseLock) gets it back before a release grants anything.
    redis.call('hset', semKey, 'permits', permits, 'w:' .. permitId, take, 'l:' .. permitId, leaseMs, 's:' .. permitId, now .. ' ' .. attemptStamp)
  end
  -- Sleep until the first lease ends (a permit may come back by expiry) or a heartbeat is due.
  local first = redis.call('zrange', leasesKey, 0, 0, 'withscores')
  reply = first[2] and math.max(1, tonumber(first[2]) - now) or waiterTimeoutMs
end

-- Permits that came back by expiry (or a dead waiter that stood in the way, or the caller that
-- stood first) may admit the waiters now at the head of the line: they get them at once. The
-- caller is never among them (it has its answer: granted, or it does not fit).
if changed or leftLine then
  local skipId = permitId
  local grantCapMs = waiterTimeoutMs
  -- #include semaphore-grant-line
end
if fits or joinLine or changed then rearm() end
return reply
