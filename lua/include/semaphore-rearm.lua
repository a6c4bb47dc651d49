-- A semaphore after a change: its keys live as long as their latest deadline, so dead holders and
-- waiters leave no garbage (rounded up to whole ms: a PEXPIRE refusing a fraction would leave them without a TTL). The line lives as long as its latest waiter; the hash (which also keeps
-- the waiters' requests) and the leases as long as the latest holder or waiter.
-- Expects  semKey, leasesKey, lineKey, deadlinesKey, now
-- Defines  nothing

do
  local latestWaiter = redis.call('zrange', deadlinesKey, -1, -1, 'withscores')
  local latestLease = redis.call('zrange', leasesKey, -1, -1, 'withscores')
  local waitersUntil = tonumber(latestWaiter[2] or 0)
  local holdersUntil = math.max(waitersUntil, tonumber(latestLease[2] or 0))
  if waitersUntil > now then
    redis.call('pexpire', lineKey, math.ceil(waitersUntil - now))
    redis.call('pexpire', deadlinesKey, math.ceil(waitersUntil - now))
  else
    redis.call('del', lineKey, deadlinesKey)
  end
  if holdersUntil > now then
    redis.call('pexpire', semKey, math.ceil(holdersUntil - now))
    redis.call('pexpire', leasesKey, math.ceil(holdersUntil - now))
  else
    redis.call('del', semKey, leasesKey)
  end
end
