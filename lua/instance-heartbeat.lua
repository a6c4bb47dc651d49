-- Keep a module instance in the index of live instances (or take it out), on the server's clock.
-- The index lets `liveInstances()` list the live instances without a SCAN; each member's score is
-- the moment its instance stops counting as alive unless its next heartbeat moves it on.
-- KEYS[1]  instance index: sorted set client id -> alive until (ms, server clock); it lives as long
--          as its latest member
-- ARGV[1]  client id
-- ARGV[2]  '1' to add or refresh the instance, '0' to take it out (a clean shutdown)
-- ARGV[3]  how long the instance counts as alive from now, in ms (one watchdog lease)
-- Returns  how many expired members this call dropped (at most 100: bounded work per call)
local indexKey = KEYS[1]
local clientId = ARGV[1]
local adding = ARGV[2] == '1'
local aliveMs = tonumber(ARGV[3])

-- #include server-clock

if adding then
  redis.call('zadd', indexKey, now + aliveMs, clientId)
else
  redis.call('zrem', indexKey, clientId)
end
-- #include instance-index-prune
return #expired
