-- Now, on the server's clock.
-- Expects  nothing
-- Defines  time (the reply of TIME: seconds, microseconds), now (in ms)

-- The server's clock, never the clients': a skewed client cannot reorder, evict or expire anyone.
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
