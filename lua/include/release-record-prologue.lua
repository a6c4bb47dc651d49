-- The start of a release that may be a plain release or an undo. A plain release (grantedBy == '')
-- replays its recorded outcome when it is a resend (release-record-replay.lua) and records its
-- outcome at the end. An undo (grantedBy = an acquire request id) goes on only while that request's
-- grant is the last one applied, and clears the request id.
-- Expects  grantedBy, recordKey, holdKey (the hash holding requestField), requestField
-- Defines  nothing

if grantedBy == '' then
  -- #include release-record-replay
else
  -- Undo only what that acquire request granted. Idempotent by itself (the request id is cleared)
  -- and never recorded: if ioredis resends the acquire and then this undo, the undo applies again.
  if redis.call('hget', holdKey, requestField) ~= grantedBy then
    return nil
  end
  redis.call('hdel', holdKey, requestField)
end
