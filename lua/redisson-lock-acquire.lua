-- Acquire or re-enter a lock in Redisson's layout (RLock; RFencedLock when fenced): exactly the
-- writes of Redisson's tryLockInnerAsync (docs/redisson-interop.md#plain-lock), except that a
-- re-entry never shortens a longer lease the key has (Redisson sets it).
-- KEYS[1]  the lock hash N (Redisson's mapped name): field <owner id> = hold count; TTL = the lease
-- KEYS[2]  RFencedLock's token counter redisson_lock_token:{N} (never expires); used when ARGV[3] = '1'
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id ('<client uuid>:<n>', Redisson's shape, never equal to a Java owner)
-- ARGV[3]  '1': RFencedLock (INCR the token on every grant, re-entry included, as Java does)
-- ARGV[4]  '1': re-entry only (a body's call chain asking again, docs/owners-and-reentry.md#the-owner-model):
--          re-enter the owner's hold, never start a new one (no write at all otherwise)
-- Returns  {hold count after the grant, token or nil} when acquired or re-entered, otherwise the
--          lock's TTL in ms (-1: held without a TTL); an error reply 'LOCKNAMECONFLICT <type>
--          <structure> <key>' (nothing written) when N is not a lock (another type, or a hash whose
--          fields are not a lock's), or the token key is not a counter; -4 when re-entry only and
--          the owner holds nothing
local lockKey = KEYS[1]
local tokenKey = KEYS[2]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local fenced = ARGV[3] == '1'
local reenterOnly = ARGV[4] == '1'

-- #include redisson-key-guard
local lockType = keyType(lockKey)
if reenterOnly and not (lockType == 'hash' and redis.call('hexists', lockKey, ownerId) == 1) then
  return -4
end
if lockType == 'none' or (lockType == 'hash' and redis.call('hexists', lockKey, ownerId) == 1) then
  local token = false
  if fenced then
    local tokenType = keyType(tokenKey)
    if tokenType ~= 'none' and (tokenType ~= 'string' or not string.match(redis.call('get', tokenKey), '^%-?%d+$')) then
      return conflict(tokenType, 'fence-token', tokenKey)
    end
    token = redis.call('incr', tokenKey)
  end
  local count = redis.call('hincrby', lockKey, ownerId, 1)
  -- Every lock key has a TTL: a Java waiter that reads none waits for a message only.
  if count == 1 or redis.call('pttl', lockKey) < leaseMs then
    redis.call('pexpire', lockKey, leaseMs)
  end
  return { count, token }
end
if lockType ~= 'hash' or not isLockHash(lockKey) then
  return conflict(lockType, 'lock', lockKey)
end
return redis.call('pttl', lockKey)
