-- The instance identities (which process, on which host) of the owners an inspect script lists,
-- read once per client id: only the identity fields of each instance hash (HMGET), never the rest
-- (its contention counters may be large). Standalone Redis only: those keys are not declared.
-- Expects  instancePrefix (the instance key prefix; the hash is instancePrefix .. '{' .. client id .. '}')
-- Defines  instances ({client id, {field, value, ...}, ...}), seenClients, addInstance(ownerId)

local instances = {}
local seenClients = {}
local identityFields = { 'clientId', 'clientName', 'host', 'pid', 'startedAt' }
local function addInstance(ownerId)
  local clientId = string.match(ownerId, '^(.*):[^:]*$')
  if clientId and not seenClients[clientId] then
    seenClients[clientId] = true
    local values = redis.call('hmget', instancePrefix .. '{' .. clientId .. '}', unpack(identityFields))
    local info = {}
    for i, field in ipairs(identityFields) do
      if values[i] then
        table.insert(info, field)
        table.insert(info, values[i])
      end
    end
    if #info > 0 then
      table.insert(instances, clientId)
      table.insert(instances, info)
    end
  end
end
