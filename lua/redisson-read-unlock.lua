-- Release read holds of a Redisson RReadWriteLock (layout 'redisson'): Redisson's read unlock
-- (3.44.0+), effect for effect (docs/redisson-interop.md#read-write). The hash's TTL becomes the
-- longest remaining TTL of any reader's timeout keys, so each reader's hold lives exactly as long as
-- its own keys; with none left (and no writer), the hash goes and waiters are woken with 0.
-- KEYS[1]  the lock's hash N (see redisson-read-acquire.lua)
-- KEYS[2]  the lock's channel redisson_rwlock:{N}
-- KEYS[3]  this owner's timeout prefix {N}:<owner>:rwlock_timeout
-- KEYS[4]  the prefix other readers' timeout keys are built from: {N}, or N when it has a brace
-- KEYS[5]  this unlock call's latch redisson_unlock_latch:{N}:<32 hex>: its first outcome, replayed
--          to a resend
-- ARGV[1]  owner id
-- ARGV[2]  publish command: 'PUBLISH', or 'SPUBLISH' (sharded, as Redisson decided it)
-- ARGV[3]  the latch's PX in ms (0: no latch, the surplus form)
-- ARGV[4]  '' to release one hold (Redisson's unlock); a count for the surplus form: bring the
--          owner's count down to it in one call (each step Redisson's effect), no write when the
--          count is not above it
-- Returns  nil when the owner holds no read lock here (also when N is no hash: nothing written); 0 when the hash stays (holds of this or other
--          owners remain); 1 when it was deleted; -1 (surplus form only) when nothing was above the
--          count
local rwKey = KEYS[1]
local channel = KEYS[2]
local timeoutPrefix = KEYS[3]
local keyPrefix = KEYS[4]
local latchKey = KEYS[5]
local ownerId = ARGV[1]
local publishCommand = ARGV[2]
local latchTtlMs = tonumber(ARGV[3])
local guard = tonumber(ARGV[4])

-- #include redisson-unlock-latch

-- A key of another type holds no hold of ours: nothing written (pcall: no extra command).
local mode = redis.pcall('hget', rwKey, 'mode')
if type(mode) == 'table' then
  return nil
end
if mode == false then
  if guard ~= nil then return -1 end
  redis.call(publishCommand, channel, '0')
  answered(1)
  return nil
end

local held = tonumber(redis.call('hget', rwKey, ownerId))
if held == nil then
  if guard ~= nil then return -1 end
  return nil
end
local target = held - 1
if guard ~= nil then
  if held <= guard then return -1 end
  target = guard
end

-- Which of the owner's holds ended is not known here (one owner's holds may be taken with different
-- leases and released in any order: two flows of one call chain): the holds left keep the longest
-- timeout keys, renumbered 1..count as Redisson's unlock expects (it deletes key count+1).
local ttls = {}
for k = 1, held do
  ttls[k] = redis.call('pttl', timeoutPrefix .. ':' .. k)
end
table.sort(ttls, function(x, y) return x > y end)
local count = redis.call('hincrby', rwKey, ownerId, target - held)
if count == 0 then
  redis.call('hdel', rwKey, ownerId)
end
for k = 1, count do
  local holdKey = timeoutPrefix .. ':' .. k
  if ttls[k] > 0 then
    if redis.call('pttl', holdKey) ~= ttls[k] then
      redis.call('set', holdKey, 1, 'px', ttls[k])
    end
  elseif ttls[k] == -2 then
    redis.call('del', holdKey)
  end
end
for k = held, count + 1, -1 do
  redis.call('del', timeoutPrefix .. ':' .. k)
end

if redis.call('hlen', rwKey) > 1 then
  -- Every field with a numeric value counts as a reader (a writer's field names no timeout keys).
  local longest = -3
  local fields = redis.call('hgetall', rwKey)
  for i = 1, #fields, 2 do
    local holds = tonumber(fields[i + 1])
    if holds ~= nil then
      for k = holds, 1, -1 do
        local ttl = redis.call('pttl', keyPrefix .. ':' .. fields[i] .. ':rwlock_timeout:' .. k)
        longest = math.max(longest, ttl)
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', rwKey, longest)
    return answered(0)
  end
  if mode == 'write' then
    return answered(0)
  end
end

redis.call('del', rwKey)
redis.call(publishCommand, channel, '0')
return answered(1)
