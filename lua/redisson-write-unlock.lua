-- Release write holds of a Redisson RReadWriteLock (layout 'redisson'): Redisson's write unlock,
-- effect for effect (docs/redisson-interop.md#read-write), except that a partial release leaves
-- the TTL as it is (never shorter). The last write hold: the hash goes and every waiter is woken
-- with 1, or, when the owner still reads, the lock turns to read mode (a downgrade; Redisson
-- publishes nothing then).
-- KEYS[1]  the lock's hash N (see redisson-read-acquire.lua)
-- KEYS[2]  the lock's channel redisson_rwlock:{N}
-- KEYS[3]  this unlock call's latch redisson_unlock_latch:{N}:<32 hex> (see redisson-read-unlock.lua)
-- ARGV[1]  the owner's writer field, <owner>:write
-- ARGV[2]  publish command: 'PUBLISH' or 'SPUBLISH'
-- ARGV[3]  the latch's PX in ms (0: no latch, the surplus form)
-- ARGV[4]  '' to release one hold; a count for the surplus form (see redisson-read-unlock.lua)
-- Returns  nil when the owner holds no write lock here (also when N is no hash: nothing written); 0 when write holds of the owner remain; 1
--          when the last one went; -1 (surplus form only) when nothing was above the count
local rwKey = KEYS[1]
local channel = KEYS[2]
local latchKey = KEYS[3]
local writerField = ARGV[1]
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
  redis.call(publishCommand, channel, '1')
  answered(1)
  return nil
end

local held = nil
if mode == 'write' then
  held = tonumber(redis.call('hget', rwKey, writerField))
end
if held == nil then
  if guard ~= nil then return -1 end
  return nil
end
local target = held - 1
if guard ~= nil then
  if held <= guard then return -1 end
  target = guard
end

local count = redis.call('hincrby', rwKey, writerField, target - held)
if count > 0 then
  return answered(0)
end

redis.call('hdel', rwKey, writerField)
if redis.call('hlen', rwKey) == 1 then
  redis.call('del', rwKey)
  redis.call(publishCommand, channel, '1')
else
  redis.call('hset', rwKey, 'mode', 'read')
end
return answered(1)
