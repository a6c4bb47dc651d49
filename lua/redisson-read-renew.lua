-- Renew one owner's read holds of a Redisson RReadWriteLock (layout 'redisson'): Redisson's read
-- renewal (4.7.0 ReadLockTask, for one owner), extend-only. The owner's timeout keys are what keep
-- a read unlock of another client from deleting its hold (docs/redisson-interop.md#read-write).
-- KEYS[1]  the lock's hash N (see redisson-read-acquire.lua)
-- KEYS[2]  this owner's timeout prefix {N}:<owner>:rwlock_timeout
-- KEYS[3]  the prefix other readers' timeout keys are built from: {N}, or N when it has a brace
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  '1': extend only (the watchdog, a multi-lock's re-arm); otherwise the owner's keys get
--          exactly ARGV[1] (minHoldTime after the last release), and the hash exactly that too,
--          unless another reader's keys or the owner's own write hold need it longer
-- Returns  1 when renewed, 0 when the owner holds no read lock here, or none of its timeout keys
--          lives (the hold was lost)
local rwKey = KEYS[1]
local timeoutPrefix = KEYS[2]
local keyPrefix = KEYS[3]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local extendOnly = ARGV[3] == '1'

local holds = tonumber(redis.call('hget', rwKey, ownerId))
if holds == nil then
  return 0
end

local alive = false
for k = holds, 1, -1 do
  local holdKey = timeoutPrefix .. ':' .. k
  local ttl = redis.call('pttl', holdKey)
  if ttl ~= -2 then
    alive = true
    if not extendOnly or ttl < leaseMs then
      redis.call('pexpire', holdKey, leaseMs)
    end
  end
end
if not alive then
  return 0
end

local ttl = redis.call('pttl', rwKey)
if extendOnly then
  if ttl < leaseMs then
    redis.call('pexpire', rwKey, leaseMs)
  end
  return 1
end

-- Exact: as short as asked, but never shorter than another reader's hold (Redisson's own acquire
-- keeps the hash as long as its longest reader) nor than the owner's write hold (a downgrade).
local target = leaseMs
if redis.call('hget', rwKey, 'mode') == 'write' then
  target = math.max(target, ttl)
end
local fields = redis.call('hgetall', rwKey)
for i = 1, #fields, 2 do
  local count = tonumber(fields[i + 1])
  if count ~= nil and fields[i] ~= ownerId then
    for k = count, 1, -1 do
      target = math.max(target, redis.call('pttl', keyPrefix .. ':' .. fields[i] .. ':rwlock_timeout:' .. k))
    end
  end
end
redis.call('pexpire', rwKey, target)
return 1
