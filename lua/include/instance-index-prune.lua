-- The instance index after a change or a read: members whose time ran out (an instance that
-- crashed, or lost Redis for a whole lease) leave it, at most 100 per call, oldest first (the rest
-- in the calls that follow: work per call stays bounded however many instances died); the index
-- then lives as long as its latest member, and goes when none is left.
-- Expects  indexKey, now
-- Defines  expired (the client ids dropped)

local expired = redis.call('zrangebyscore', indexKey, '-inf', string.format('%.0f', now), 'limit', 0, 100)
if #expired > 0 then
  redis.call('zrem', indexKey, unpack(expired))
end
do
  local latest = redis.call('zrange', indexKey, -1, -1, 'withscores')
  local until_ = tonumber(latest[2] or 0)
  if until_ > now then
    redis.call('pexpire', indexKey, math.ceil(until_ - now))
  else
    redis.call('del', indexKey)
  end
end
