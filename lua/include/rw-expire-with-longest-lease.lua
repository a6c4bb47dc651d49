-- A read-write lock's hash and leases live as long as its longest lease (there is at least one).
-- Expects  rwKey, leasesKey, now
-- Defines  longest (ms)

local longest = tonumber(redis.call('zrange', leasesKey, -1, -1, 'withscores')[2]) - now
redis.call('pexpire', rwKey, math.ceil(longest))
redis.call('pexpire', leasesKey, math.ceil(longest))
