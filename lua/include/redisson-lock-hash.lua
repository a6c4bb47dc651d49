-- Whether a key is a lock of Redisson's layout, and its fields when it is (reads only). Redisson's
-- lock hash holds only owners ('<36-character client id>:<thread id>', a writer's ending in
-- ':write') mapped to hold counts, plus 'mode' for a read-write lock (docs/redisson-interop.md#introspection).
-- A hash of more than maxLockFields fields is not read (no lock has that many holders).
-- shape is 'none' (no key), 'lock' (owners only), 'read-write' ('mode' and owners) or 'foreign'
-- (any other key or hash); lockFields is the flat { field, value, ... } of the owners, without
-- 'mode' (empty unless 'lock' or 'read-write'); lockMode is 'read', 'write' or false.
-- Expects  lockKey
-- Defines  maxLockFields, isOwnerField, shape, lockFields, lockMode, keyType

local maxLockFields = 1000

local function isOwnerField(field)
  local clientId, thread = string.match(field, '^([0-9a-f%-]+):(.+)$')
  if not clientId or #clientId ~= 36 then return false end
  return string.match(thread, '^%d+$') ~= nil or string.match(thread, '^%d+:write$') ~= nil
end

local shape = 'none'
local lockFields = {}
local lockMode = false
local keyType = redis.call('type', lockKey)['ok']
if keyType == 'hash' then
  shape = 'foreign'
  if redis.call('hlen', lockKey) <= maxLockFields then
    local fields = redis.call('hgetall', lockKey)
    local owners = {}
    local recognised = true
    for i = 1, #fields, 2 do
      if fields[i] == 'mode' then
        lockMode = fields[i + 1]
      elseif isOwnerField(fields[i]) then
        table.insert(owners, fields[i])
        table.insert(owners, fields[i + 1])
      else
        recognised = false
        break
      end
    end
    if recognised and #owners > 0 then
      lockFields = owners
      shape = lockMode and 'read-write' or 'lock'
    else
      lockMode = false
    end
  end
elseif keyType ~= 'none' then
  shape = 'foreign'
end
