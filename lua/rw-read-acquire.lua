-- Acquire or re-enter the read lock of a read-write lock, or wait in its line.
-- KEYS[1]  read-write hash: mode = 'read' | 'write'; writer = the writer's owner id and writes = its
--          hold count (write mode only); read:<owner id> = that owner's read hold count;
--          rq:<owner id> = that owner's last applied acquire request id; since:<owner id> = when
--          that owner's read hold began (ms, server clock), kept while it holds any
-- KEYS[2]  leases: sorted set owner id -> lease deadline in ms on the server clock, one entry per
--          owner holding anything, so a crashed reader's hold ends while the others keep theirs;
--          an owner's entry is its longest hold's (a shorter one never lowers it); the hash and
--          this set expire with the longest lease
-- KEYS[3]  waiting line: list of waiter entries '<owner id> <request id> <lease ms> <r|w>', first
--          come first; exists only while someone waits (see rw-grant-line)
-- KEYS[4]  waiter deadlines: sorted set entry -> deadline in ms on the server clock (a waiter that
--          stops retrying leaves the line once it passes)
-- KEYS[5]  when each waiter last attempted: hash entry -> '<ms on the server clock> <send stamp>[ s]'
--          (' s': that attempt's seat was subscribed and heard, see line-join); '~dead:<client id>'
--          marks a client whose entries are skipped (line-live-head)
-- KEYS[6]  fence: the last fencing token handed out for this name (a writer admitted from the line
--          gets one; see rw-write-acquire.lua)
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  request id: a resent acquire finds its own id applied and does not raise the hold count
--          twice; a waiter the lock was handed to finds its grant the same way (and gets its full lease)
-- ARGV[4]  this waiter's line entry when it waits; '' for a single attempt that never joins the line
-- ARGV[5]  waiter timeout in ms: a waiter's deadline is now + this + the TTL it was told; also the
--          longest lease a grant to a waiter starts with
-- ARGV[6]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[7]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[8]  this attempt's send stamp (µs, the waiter's monotonic clock; see grant-timing), ending
--          in ' s' when the waiter's seat is subscribed (line-join checks it with Redis)
-- ARGV[9]  '1': re-entry only (a body's call chain asking again, docs/owners-and-reentry.md#the-owner-model):
--          re-enter a hold the owner has (a read, or the write: a downgrade), never start a new one
-- ARGV[10] '1': a grant answers {fence or -1, since:<owner id>} (the read episode: when the owner's
--          read hold began; a later episode of the same owner has a later one)
-- Returns  when acquired or re-entered: nil when the owner does not hold the write lock, {fence}
--          (the write hold's fencing token, the hash's field fence) when it does (a read inside
--          its write: a downgrade); an owner whose process counts a write hold learns this way that
--          the write ended in Redis (docs/architecture.md#release-records). Otherwise the
--          lock's remaining TTL in ms; -4 when re-entry only and the owner holds nothing
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local lineKey = KEYS[3]
local deadlinesKey = KEYS[4]
local seenKey = KEYS[5]
local fenceKey = KEYS[6]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local requestId = ARGV[3]
local myEntry = ARGV[4] or ''
local waiterTimeoutMs = tonumber(ARGV[5])
local grantCapMs = waiterTimeoutMs
local publishCommand = ARGV[6]
local fenceMemoryMs = ARGV[7]
local attemptStamp = ARGV[8] or ''
local reenterOnly = ARGV[9] == '1'
local reportEpisode = ARGV[10] == '1'
local callerEntry = myEntry
local readField = 'read:' .. ownerId
local requestField = 'rq:' .. ownerId

-- #include server-clock

-- The lean path (docs/architecture.md#lean-path): nobody holds the lock in any mode, nobody has a
-- lease on it and nobody waits: the first read hold, in a few calls. (A resent attempt whose first
-- run was applied finds the hash and goes the whole way, which knows its request id.)
if reenterOnly and redis.call('exists', rwKey) == 0 then
  -- The owner holds nothing: a lease entry of its own left behind (its hash deleted) ends too.
  redis.call('zrem', leasesKey, ownerId)
  return -4
end
if redis.call('exists', rwKey, leasesKey, lineKey) == 0 then
  redis.call('hset', rwKey, 'mode', 'read', readField, 1, requestField, requestId, 'since:' .. ownerId, now)
  redis.call('zadd', leasesKey, now + leaseMs, ownerId)
  redis.call('pexpire', rwKey, leaseMs)
  redis.call('pexpire', leasesKey, leaseMs)
  if reportEpisode then
    return { -1, tostring(now) }
  end
  return nil
end

-- #include rw-drop-expired-owners
if redis.call('zcard', leasesKey) == 0 then
  redis.call('del', rwKey, leasesKey)
end
if reenterOnly and redis.call('hexists', rwKey, readField) == 0 and redis.call('hget', rwKey, 'writer') ~= ownerId then
  redis.call('zrem', leasesKey, ownerId)
  return -4
end
if redis.call('exists', lineKey) == 1 then
  -- The lock may admit waiters now (a holder's lease ran out, or this waiter's grant is due).
  -- #include rw-grant-line
end

local mode = redis.call('hget', rwKey, 'mode')
local writer = redis.call('hget', rwKey, 'writer')
-- A new reader does not get in ahead of a writer in line (after rw-grant-line, a line beside a
-- free or read-held lock has a writer at its head); an owner already holding re-enters.
local mayRead = mode == false or (mode == 'read' and redis.call('exists', lineKey) == 0)
if mayRead or writer == ownerId or (mode == 'read' and redis.call('hexists', rwKey, readField) == 1) then
  if mode == false then
    redis.call('hset', rwKey, 'mode', 'read')
  end
  -- Applied already: the last request, or the one the line handed the lock to (rw-grant-line).
  if redis.call('hget', rwKey, requestField) ~= requestId and redis.call('hget', rwKey, 'handed:rq:' .. ownerId) ~= requestId then
    -- The owner's first read hold records when it started (since:<owner id>, ms on the server
    -- clock; inspect's heldSince), in the call that records the request: no call more.
    if redis.call('hincrby', rwKey, readField, 1) == 1 then
      redis.call('hset', rwKey, requestField, requestId, 'since:' .. ownerId, now)
    else
      redis.call('hset', rwKey, requestField, requestId)
    end
  end
  -- GT: a hold with a shorter lease (a read inside a write) never shortens the owner's lease.
  redis.call('zadd', leasesKey, 'gt', now + leaseMs, ownerId)
  -- #include rw-expire-with-longest-lease
  -- #include line-drop-own-entry
  if reportEpisode then
    local fence = writer == ownerId and (tonumber(redis.call('hget', rwKey, 'fence')) or 0) or -1
    return { fence, redis.call('hget', rwKey, 'since:' .. ownerId) }
  end
  if writer == ownerId then
    return { tonumber(redis.call('hget', rwKey, 'fence')) or 0 }
  end
  return nil
end

local ttl = redis.call('pttl', rwKey)
if myEntry ~= '' then
  local sleepsForMs = math.max(ttl, 0)
  local channel = rwKey .. ':channel'
  -- #include line-join
end
return ttl
