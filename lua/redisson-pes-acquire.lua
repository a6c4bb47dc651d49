-- Take permits of a semaphore in Redisson's layout: RPermitExpirableSemaphore's acquire
-- (docs/redisson-interop.md#semaphores), so Java PES and RSemaphore users count the same permits.
-- KEYS[1]  N: string, the permits available (Redisson's counter, shared with RSemaphore)
-- KEYS[2]  {N}:timeout: sorted set permit id (16 raw bytes) -> deadline, epoch ms on the holder's
--          clock (922337203685477: never)
-- KEYS[3]  redisson_sc:{N}: channel carrying the new available count
-- KEYS[4]  nestjs_redis_locks_permits:{N}: ours, not Redisson's: set (no TTL) once this layout
--          created the counter N or took it over, so that an application's number at N is never
--          taken for a counter. A counter without it is taken over only when permits of it are
--          leased ({N}:timeout exists) or it holds exactly the caller's limit with none leased (what
--          Java's trySetPermits leaves); otherwise it is refused
-- ARGV[1]  n: how many permits to take (one id each)
-- ARGV[2]  deadline of the new permits (epoch ms, this host's clock)
-- ARGV[3]  now (epoch ms, this host's clock: Redisson compares deadlines with the client's clock)
-- ARGV[4]  Redisson's "never expires" score, 922337203685477
-- ARGV[5]  publish command: 'PUBLISH', or 'SPUBLISH' where Redisson uses sharded pub/sub
-- ARGV[6]  the limit the caller expects: when N does not exist yet it is set to this (Redisson's
--          trySetPermits); otherwise available + leased must not exceed it
-- ARGV[7.. 6+n]  the permit ids, 16 raw bytes each, unique per acquisition
-- Returns  'OK' when granted (also when the first id is leased already: a resent attempt that was
--          granted); {'limit', available + leased} when the semaphore holds more permits than the
--          caller's limit (no write); otherwise ':' .. the nearest deadline (the wait is bounded by it),
--          or nil when no leased permit will expire; an error reply 'LOCKNAMECONFLICT <type>
--          <structure> <key>' (nothing written) when N is not a permit counter (another type, a
--          string that is no number, or a number this layout neither created nor may take over)
--          or {N}:timeout is not a sorted set
local semKey = KEYS[1]
local timeoutKey = KEYS[2]
local channel = KEYS[3]
local markerKey = KEYS[4]
local take = tonumber(ARGV[1])
local deadline = ARGV[2]
local now = ARGV[3]
local neverExpires = ARGV[4]
local publishCommand = ARGV[5]
local limit = tonumber(ARGV[6])
local firstId = 7

-- #include redisson-pes-guard
if pesConflict then
  return pesConflict
end
-- A counter this layout did not create: taken over only as described for KEYS[4].
local takeOver = false
if stored ~= false and redis.call('exists', markerKey) == 0 then
  if timeoutType == 'none' and tonumber(stored) ~= limit then
    return conflict('string', 'permit-counter', semKey)
  end
  takeOver = true
end

-- Ours: a resent acquire whose first run granted finds its ids leased. The caller counts the lease
-- from this attempt's send time, so the deadline becomes this attempt's (never earlier: Redisson's
-- updateLeaseTime effect); leased ids already past their deadline go back as Redisson's reclaim
-- gives them back, and the attempt goes on as a new one.
local leased = redis.call('zscore', timeoutKey, ARGV[firstId])
if leased then
  if tonumber(leased) > tonumber(now) then
    for i = firstId, #ARGV do
      local score = redis.call('zscore', timeoutKey, ARGV[i])
      if score and tonumber(score) < tonumber(deadline) then
        redis.call('zadd', timeoutKey, deadline, ARGV[i])
      end
    end
    return 'OK'
  end
  local ours = {}
  for i = firstId, #ARGV do
    table.insert(ours, ARGV[i])
  end
  local removed = redis.call('zrem', timeoutKey, unpack(ours))
  if removed > 0 then
    local count = redis.call('incrby', semKey, removed)
    if count > 0 then
      redis.call(publishCommand, channel, count)
    end
  end
end

local available = redis.call('get', semKey)
if available == false then
  -- Redisson's trySetPermits: the first user sets the limit.
  redis.call('set', semKey, ARGV[6])
  redis.call('set', markerKey, 1)
  redis.call(publishCommand, channel, ARGV[6])
  available = ARGV[6]
end

-- Ours (reads): available + leased stays constant through reclaims and grants. More than the
-- caller's limit means the semaphore was set up with a larger limit: refuse, writing nothing.
-- Fewer is allowed: RSemaphore holders take from the counter without leasing an id.
local total = tonumber(available) + redis.call('zcard', timeoutKey)
if total > limit then
  return { 'limit', total }
end
if takeOver then
  redis.call('set', markerKey, 1)
end

local reclaimLimit = take
-- #include redisson-pes-reclaim

available = redis.call('get', semKey)
if available ~= false and tonumber(available) >= take then
  redis.call('decrby', semKey, take)
  for i = firstId, #ARGV do
    redis.call('zadd', timeoutKey, deadline, ARGV[i])
  end
  local ttl = redis.call('pttl', semKey)
  if ttl > 0 then
    redis.call('pexpire', timeoutKey, ttl)
  end
  return 'OK'
end

local nearest = redis.call('zrange', timeoutKey, 0, 0, 'WITHSCORES')
if nearest[1] ~= nil and nearest[2] ~= neverExpires then
  return ':' .. tostring(nearest[2])
end
return nil
