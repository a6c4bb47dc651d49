-- An acquisition that gets the lock leaves no entry of its own in the line: a second acquisition
-- of one owner that re-enters once the first got in, or an attempt that finds the grant made to it.
-- Expects  deadlinesKey, seenKey, myEntry ('' for an attempt that never joins)
-- Defines  nothing

-- Its place in the list stays as a tombstone, popped once it stands first (line-live-head).
if myEntry ~= '' and redis.call('zrem', deadlinesKey, myEntry) == 1 then
  redis.call('hdel', seenKey, myEntry)
end
