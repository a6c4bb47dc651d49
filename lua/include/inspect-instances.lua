-- The instance identities (which process, on which host) of the owners an inspect script lists,
-- read once per client id (lua/include/instance-identity.lua). Standalone Redis only: those keys are
-- not declared.
-- Expects  instancePrefix (the instance key prefix; the hash is instancePrefix .. '{' .. client id .. '}')
-- Defines  instances ({client id, {field, value, ...}, ...}), seenClients, addInstance(ownerId)

-- #include instance-identity

local instances = {}
local seenClients = {}
local function addInstance(ownerId)
  local clientId = string.match(ownerId, '^(.*):[^:]*$')
  if clientId and not seenClients[clientId] then
    seenClients[clientId] = true
    local info = instanceIdentity(clientId)
    if #info > 0 then
      table.insert(instances, clientId)
      table.insert(instances, info)
    end
  end
end
