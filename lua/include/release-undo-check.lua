-- An undo (grantedBy = an acquire request id) goes on only while that request's grant is the last
-- one applied, or is the grant a line handed to it (handedField: a re-entry of the same owner since
-- then overwrote requestField, not that), and clears the request id: it never takes away a hold
-- another request of the same owner made. Idempotent by itself (the request id is cleared) and
-- never recorded: if ioredis resends the acquire and then this undo, the undo applies again.
-- Expects  grantedBy, holdKey (the hash holding requestField), requestField, handedField
-- Defines  nothing

local applied = redis.call('hget', holdKey, requestField) == grantedBy
local handed = redis.call('hget', holdKey, handedField) == grantedBy
if not applied and not handed then
  return nil
end
if applied then redis.call('hdel', holdKey, requestField) end
if handed then redis.call('hdel', holdKey, handedField) end
