-- An acquisition that gets the lock leaves no entry of its own in the line: a second acquisition
-- of one owner that re-enters once the first got in, or an attempt that finds the grant made to it.
-- Expects  lineKey, deadlinesKey, seenKey, myEntry ('' for an attempt that never joins)
-- Defines  nothing

if myEntry ~= '' and redis.call('zscore', deadlinesKey, myEntry) then
  redis.call('lrem', lineKey, 1, myEntry)
  redis.call('zrem', deadlinesKey, myEntry)
  redis.call('hdel', seenKey, myEntry)
end
