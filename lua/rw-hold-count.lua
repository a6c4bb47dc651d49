-- How many holds one owner has of a read-write lock in one mode, counting only a live lease
-- (a hold whose lease ran out counts as gone even before a script clears it). Read-only.
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- ARGV[1]  owner id
-- ARGV[2]  mode: 'read' or 'write'
-- Returns  the hold count, 0 when none
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local ownerId = ARGV[1]
local mode = ARGV[2]

-- #include server-clock
local deadline = tonumber(redis.call('zscore', leasesKey, ownerId))
if deadline == nil or deadline <= now then
  return 0
end

if mode == 'write' then
  if redis.call('hget', rwKey, 'writer') ~= ownerId then
    return 0
  end
  return tonumber(redis.call('hget', rwKey, 'writes'))
end
return tonumber(redis.call('hget', rwKey, 'read:' .. ownerId) or 0)
