-- Whether a Redisson RReadWriteLock is held for reading: Redisson's readLock().isLocked(), read only
-- (docs/redisson-interop.md#read-write).
-- KEYS[1]  the lock's hash N (see redisson-read-acquire.lua)
-- Returns  1 in read mode, or in write mode with a reader beside the writer (its downgrade); else 0
local rwKey = KEYS[1]

local mode = redis.call('hget', rwKey, 'mode')
if mode == 'read' or (mode == 'write' and redis.call('hlen', rwKey) > 2) then
  return 1
end
return 0
