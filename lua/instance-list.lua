-- List live module instances from the instance index (see instance-heartbeat.lua): no SCAN, at most
-- ARGV[1] instances per call, the expired members met on the way dropped (at most 100).
-- KEYS[1]  instance index: sorted set client id -> alive until (ms, server clock)
-- ARGV[1]  how many instances to list at most (1 to 1000)
-- ARGV[2]  instance key prefix: when not empty, the identity fields (clientId, clientName, host, pid,
--          startedAt) of each listed instance's hash ARGV[2] .. '{' .. client id .. '}' are read
--          too, never its other fields (standalone Redis only: those keys are not declared)
-- Returns  { now (ms, server clock), 1 when more live instances than ARGV[1] exist else 0,
--          { client id, alive until (ms), { field, value, ... } (empty when not read or gone), ... } }
--          soonest to expire first
local indexKey = KEYS[1]
local limit = tonumber(ARGV[1])
local instancePrefix = ARGV[2]

-- #include server-clock
-- #include instance-index-prune
-- #include instance-identity

local live = redis.call('zrangebyscore', indexKey, '(' .. string.format('%.0f', now), '+inf', 'withscores', 'limit', 0, limit + 1)
local more = 0
local listed = {}
for i = 1, #live, 2 do
  if i > 2 * limit then
    more = 1
    break
  end
  local fields = {}
  if instancePrefix ~= '' then fields = instanceIdentity(live[i]) end
  table.insert(listed, live[i])
  table.insert(listed, tonumber(live[i + 1]))
  table.insert(listed, fields)
end
return { now, more, listed }
