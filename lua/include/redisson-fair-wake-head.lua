-- Redisson's fair lock: wake the queue's head, alone, on its own channel with Redisson's `0`.
-- Expects  queueKey, channelBase (redisson_lock__channel:{N}), publishCommand
-- Defines  nothing

local nextOwner = redis.call('lindex', queueKey, 0)
if nextOwner ~= false then
  redis.call(publishCommand, channelBase .. ':' .. nextOwner, '0')
end
