-- Layout 'redisson': a script never writes a key that is not the structure it expects there (a lock
-- name is a bare key, which an application key may hold; docs/redisson-interop.md#names). keyType
-- reads a key's Redis type; conflict is the error reply the client turns into LockNameConflictError
-- (409): 'LOCKNAMECONFLICT <type found> <structure expected> <key>', sent before any write.
-- isLockHash tells a hash of Redisson's lock layout (reads only): every field is 'mode' ('read' or
-- 'write') or an owner id ('<client id>:<thread>', a writer's ending ':write': any field with a ':'
-- after its first character) with a whole hold count, and there is at least one owner. A hash of more than 1,000 fields is not walked
-- (only a read-write lock with that many readers has so many): it is one when its mode is.
-- Expects  nothing
-- Defines  keyType, conflict, isLockHash

local function keyType(key)
  return redis.call('type', key)['ok']
end

local function conflict(found, expected, key)
  return redis.error_reply('LOCKNAMECONFLICT ' .. found .. ' ' .. expected .. ' ' .. key)
end

local function lockField(field, value)
  if field == 'mode' then
    return value == 'read' or value == 'write'
  end
  return string.match(field, '^[^:]+:.') ~= nil and string.match(value, '^%d+$') ~= nil
end

local function isLockHash(key)
  if redis.call('hlen', key) > 1000 then
    local mode = redis.call('hget', key, 'mode')
    return mode == 'read' or mode == 'write'
  end
  local fields = redis.call('hgetall', key)
  local owners = 0
  for i = 1, #fields, 2 do
    if not lockField(fields[i], fields[i + 1]) then
      return false
    end
    if fields[i] ~= 'mode' then
      owners = owners + 1
    end
  end
  return owners > 0
end
