-- Inspect a plain or fair lock of Redisson's layout (RLock, RFencedLock, RFairLock) in one round
-- trip (reads only; docs/redisson-interop.md#introspection).
-- KEYS[1]  the lock hash N: field <owner> = hold count; TTL = the lease
-- KEYS[2]  RFairLock's queue redisson_lock_queue:{N}: list of owners, first in line first
-- KEYS[3]  RFairLock's deadlines redisson_lock_timeout:{N}: zset owner -> epoch ms (the queuing
--          client's clock) after which Redisson drops the waiter from the queue's head
-- KEYS[4]  RFencedLock's token counter redisson_lock_token:{N}; read when ARGV[2] = '1'
-- ARGV[1]  instance key prefix: when not empty, the identity fields of the instance hash
--          ARGV[1] .. '{' .. client id .. '}' of every holder and listed waiter are read too
--          (standalone Redis only: those keys are not declared)
-- ARGV[2]  '1': fenced locks (return the last token handed out)
-- ARGV[3]  the most waiters to list, first in line first (optional; absent or 0: every one)
-- Returns  { shape ('none' | 'lock' | 'read-write' | 'foreign', see redisson-lock-hash), pttl,
--          token or nil, { owner, hold count, ... } ('lock' only), { owner, deadline, ... } in queue
--          order (at most ARGV[3]; a deadline is nil for an owner without one), queue length,
--          { client id, { field, value, ... }, ... }, now (ms, server clock) }
local lockKey = KEYS[1]
local queueKey = KEYS[2]
local timeoutsKey = KEYS[3]
local tokenKey = KEYS[4]
local instancePrefix = ARGV[1]
local fenced = ARGV[2] == '1'
local waiterLimit = tonumber(ARGV[3]) or 0

-- #include server-clock
-- #include redisson-lock-hash

local holders = {}
if shape == 'lock' then holders = lockFields end

local token = false
if fenced then token = redis.call('get', tokenKey) end

local queueLength = redis.call('llen', queueKey)
local waiters = {}
local queued = redis.call('lrange', queueKey, 0, waiterLimit > 0 and waiterLimit - 1 or -1)
for _, owner in ipairs(queued) do
  table.insert(waiters, owner)
  table.insert(waiters, redis.call('zscore', timeoutsKey, owner))
end

-- #include inspect-instances
if instancePrefix ~= '' then
  for i = 1, #holders, 2 do addInstance(holders[i]) end
  for i = 1, #waiters, 2 do addInstance(waiters[i]) end
end

return { shape, redis.call('pttl', lockKey), token, holders, waiters, queueLength, instances, now }
