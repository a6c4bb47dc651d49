-- Redisson's unlock latch (docs/redisson-interop.md#keys): a resend of this unlock call (same latch
-- id) replays the answer its first run kept, instead of releasing again. None in surplus form.
-- Expects  latchKey, latchTtlMs (a number; 0: no latch)
-- Defines  answered (a function of the outcome: keeps it for a resend, returns it)
if latchTtlMs > 0 then
  local replayed = redis.call('get', latchKey)
  if replayed then
    return tonumber(replayed)
  end
end
local function answered(outcome)
  if latchTtlMs > 0 then
    redis.call('set', latchKey, outcome, 'px', latchTtlMs)
  end
  return outcome
end
