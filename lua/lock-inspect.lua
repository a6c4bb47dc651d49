-- Inspect a reentrant or fair lock in one round trip (reads only).
-- KEYS[1]  lock hash (see reentrant-acquire.lua): field <owner id> = hold count, <owner id>:rq = last
--          applied request id, fence = the hold's fencing token; the key's TTL is the lease
-- KEYS[2]  waiting line: list of waiter entries, first come first (see reentrant-acquire.lua)
-- KEYS[3]  waiter deadlines: sorted set entry -> deadline in ms on the server clock
-- ARGV[1]  instance key prefix: when not empty, the identity fields of the instance hash
--          ARGV[1] .. '{' .. client id .. '}' of every holder and listed waiter are read too
--          (standalone Redis only: those keys are not declared)
-- ARGV[2]  the most waiters to list, first in line first (optional; absent or 0: every one)
-- Returns  { pttl, fence or nil, { owner id, hold count, ... }, { waiter entry, ... } in line
--          order (waiters whose deadline passed are left out; at most ARGV[2]), { client id,
--          { field, value, ... }, ... }, now (ms, server clock), live waiters in all }. The hold
--          began when its fence was taken: a token is the server clock in µs at the grant, or
--          last + 1 when that is larger (see fence-token)
local lockKey = KEYS[1]
local lineKey = KEYS[2]
local deadlinesKey = KEYS[3]
local instancePrefix = ARGV[1]
local waiterLimit = tonumber(ARGV[2]) or 0

-- #include server-clock

local fence = false
local holders = {}
local fields = redis.call('hgetall', lockKey)
for i = 1, #fields, 2 do
  local field = fields[i]
  if field == 'fence' then
    fence = fields[i + 1]
  elseif string.match(field, '^%S+:%d+$') then
    -- An owner id ('<client id>:<n>'); the other fields are its request ids (':rq', ':handed:rq'),
    -- ':rls' and '~line' (see reentrant-acquire.lua, reentrant-release.lua).
    table.insert(holders, field)
    table.insert(holders, fields[i + 1])
  end
end

-- #include inspect-line
local waiters = lineEntries

-- #include inspect-instances
if instancePrefix ~= '' then
  for i = 1, #holders, 2 do addInstance(holders[i]) end
  for _, entry in ipairs(waiters) do addInstance(string.match(entry, '^%S+')) end
end

return { redis.call('pttl', lockKey), fence, holders, waiters, instances, now, lineCount }
