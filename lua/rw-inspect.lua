-- Inspect a read-write lock in one round trip (reads only).
-- KEYS[1]  read-write hash (see rw-read-acquire.lua): mode, writer, writes, read:<owner id> = read
--          hold count, since:<owner id> = when that read hold began, rq:<owner id>, fence = the
--          write hold's fencing token
-- KEYS[2]  leases: sorted set owner id -> lease deadline in ms on the server clock
-- KEYS[3]  waiting line: list of waiter entries '<owner id> <request id> <lease ms> <r|w>' (see
--          rw-read-acquire.lua); optional
-- KEYS[4]  waiter deadlines: sorted set entry -> deadline in ms on the server clock; optional
-- ARGV[1]  instance key prefix: when not empty, the identity fields of the instance hash
--          ARGV[1] .. '{' .. client id .. '}' of every holder and listed waiter are read too
--          (standalone Redis only: those keys are not declared)
-- ARGV[2]  the most waiters to list, first in line first (optional; absent or 0: every one)
-- Returns  { pttl, mode or nil, fence (write mode only) or nil, { owner id, hold count, mode, held
--          since, ... }, { client id, { field, value, ... }, ... }, { waiter entry, ... } in line
--          order (at most ARGV[2]), now (ms, server clock), live waiters in all }; held since is a
--          read hold's since:<owner id> ('' when not recorded, and for the writer: its hold began at
--          its fencing token, see fence-token); owners whose lease ran out and waiters whose
--          deadline passed are left out
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local lineKey = KEYS[3]
local deadlinesKey = KEYS[4]
local instancePrefix = ARGV[1]
local waiterLimit = tonumber(ARGV[2]) or 0

-- #include server-clock

local function alive(ownerId)
  local deadline = redis.call('zscore', leasesKey, ownerId)
  return deadline and tonumber(deadline) > now
end

local mode = redis.call('hget', rwKey, 'mode')
local holders = {}
local writer = redis.call('hget', rwKey, 'writer')
if writer and alive(writer) then
  table.insert(holders, writer)
  table.insert(holders, redis.call('hget', rwKey, 'writes') or '1')
  table.insert(holders, 'write')
  table.insert(holders, '')
end
local fields = redis.call('hgetall', rwKey)
for i = 1, #fields, 2 do
  local field = fields[i]
  if string.sub(field, 1, 5) == 'read:' then
    local ownerId = string.sub(field, 6)
    if alive(ownerId) then
      table.insert(holders, ownerId)
      table.insert(holders, fields[i + 1])
      table.insert(holders, 'read')
      table.insert(holders, redis.call('hget', rwKey, 'since:' .. ownerId) or '')
    end
  end
end

local fence = false
if mode == 'write' then
  fence = redis.call('hget', rwKey, 'fence')
end

-- #include inspect-line
local waiters = lineEntries

-- #include inspect-instances
if instancePrefix ~= '' then
  for i = 1, #holders, 4 do addInstance(holders[i]) end
  for _, entry in ipairs(waiters) do addInstance(string.match(entry, '^%S+')) end
end

return { redis.call('pttl', rwKey), mode, fence, holders, instances, waiters, now, lineCount }
