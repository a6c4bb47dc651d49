-- A read-write lock after a release or renewal: gone when no lease is left, otherwise its keys live
-- as long as the longest lease.
-- Expects  rwKey, leasesKey, now
-- Defines  emptied (true when no lease was left and the keys were deleted)

local emptied = redis.call('zcard', leasesKey) == 0
if emptied then
  redis.call('del', rwKey, leasesKey)
else
  -- #include rw-expire-with-longest-lease
end
