-- One instance's identity (which process, on which host), from its hash: only the identity fields
-- (HMGET), never whatever else its key may carry. Standalone Redis only: the key is not declared.
-- Expects  instancePrefix (the instance key prefix; the hash is instancePrefix .. '{' .. client id .. '}')
-- Defines  identityFields, instanceIdentity (clientId: its fields and values, flat; empty when gone)

local identityFields = { 'clientId', 'clientName', 'host', 'pid', 'startedAt' }
local function instanceIdentity(clientId)
  local values = redis.call('hmget', instancePrefix .. '{' .. clientId .. '}', unpack(identityFields))
  local info = {}
  for i, field in ipairs(identityFields) do
    if values[i] then
      table.insert(info, field)
      table.insert(info, values[i])
    end
  end
  return info
end
