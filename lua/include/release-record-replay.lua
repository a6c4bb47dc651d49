-- A resent release (ioredis replays unanswered commands after a reconnect) returns the outcome its
-- first run recorded instead of "not held". The script records its outcome in recordKey at the end.
-- Expects  recordKey (this release request's record)
-- Defines  recorded (false: nothing recorded, this is the first run)

local recorded = redis.call('get', recordKey)
if recorded then
  return tonumber(recorded)
end
