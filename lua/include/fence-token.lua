-- The fencing token of a new hold, written to the name's fence key: max(last token + 1, server time
-- in microseconds). Strictly greater than every token handed out before for this name while the
-- fence key lives; it grows across idle periods without a key kept forever, and stays below 2^53 (a
-- JavaScript safe integer) until the year 2255.
-- Expects  time (the reply of TIME), fenceKey, fenceMemoryMs (how long the fence key outlives its last use)
-- Defines  token (a number), tokenText (its decimal text, as stored)

-- Written as the token at once (SET ... GET answers the last one: one call on the usual path);
-- only when the last token is not below the clock (a clock that stepped back: failover, NTP) is it
-- raised to last + 1.
local tokenText = time[1] .. string.format('%06d', tonumber(time[2]))
local token = tonumber(tokenText)
local last = tonumber(redis.call('set', fenceKey, tokenText, 'px', fenceMemoryMs, 'get')) or 0
if last >= token then
  token = last + 1
  tokenText = string.format('%.0f', token)
  redis.call('set', fenceKey, tokenText, 'px', fenceMemoryMs)
end
