-- Inspect a read-write lock of Redisson's layout (RReadWriteLock) in one round trip (reads only;
-- docs/redisson-interop.md#introspection).
-- KEYS[1]  the lock hash N: mode = 'read' | 'write'; reader <owner> = hold count; writer
--          <owner>:write = hold count; TTL = the longest hold's lease
-- ARGV[1]  instance key prefix: when not empty, the identity fields of the instance hash
--          ARGV[1] .. '{' .. client id .. '}' of every holder are read too (standalone Redis only:
--          those keys are not declared)
-- ARGV[2]  the prefix of the readers' timeout keys, {N} (or N when it has a brace): a read hold k of
--          owner o lives as long as <prefix>:<o>:rwlock_timeout:<k> (k = 1..count), in N's slot,
--          read as Redisson's read unlock reads them
-- Returns  { shape ('none' | 'lock' | 'read-write' | 'foreign', see redisson-lock-hash), pttl, mode
--          or nil, { owner, hold count, 'read' | 'write', ttl, ... } ('read-write' only; owner
--          without ':write'; a reader's ttl is the longest of its timeout keys' PTTL, -2 when none
--          is left; a writer's is ''), { client id, { field, value, ... }, ... }, now (ms, server
--          clock) }
local lockKey = KEYS[1]
local instancePrefix = ARGV[1]
local timeoutKeyPrefix = ARGV[2]

-- #include server-clock
-- #include redisson-lock-hash

local holders = {}
if shape == 'read-write' then
  for i = 1, #lockFields, 2 do
    local field = lockFields[i]
    local count = lockFields[i + 1]
    local writer = string.match(field, '^(.*):write$')
    if writer then
      table.insert(holders, writer)
      table.insert(holders, count)
      table.insert(holders, 'write')
      table.insert(holders, '')
    else
      local longest = -2
      for k = 1, tonumber(count) or 0 do
        local ttl = redis.call('pttl', timeoutKeyPrefix .. ':' .. field .. ':rwlock_timeout:' .. k)
        if ttl > longest then longest = ttl end
      end
      table.insert(holders, field)
      table.insert(holders, count)
      table.insert(holders, 'read')
      table.insert(holders, longest)
    end
  end
end

-- #include inspect-instances
if instancePrefix ~= '' then
  for i = 1, #holders, 4 do addInstance(holders[i]) end
end

return { shape, redis.call('pttl', lockKey), lockMode, holders, instances, now }
