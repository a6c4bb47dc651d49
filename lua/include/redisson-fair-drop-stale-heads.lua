-- Redisson's fair lock: queue heads whose deadline passed (on the clock of the client that sent
-- `now`) leave the queue and the deadlines, one by one from the head; a head without a deadline
-- stops the walk, as in Redisson (docs/redisson-interop.md#fair-lock).
-- Expects  queueKey, timeoutsKey, now
-- Defines  nothing

while true do
  local head = redis.call('lindex', queueKey, 0)
  if head == false then break end
  local deadline = redis.call('zscore', timeoutsKey, head)
  if deadline ~= false and tonumber(deadline) <= now then
    redis.call('zrem', timeoutsKey, head)
    redis.call('lpop', queueKey)
  else
    break
  end
end
