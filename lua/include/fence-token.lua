-- The fencing token of a new hold, written to the name's fence key: max(last token + 1, server time
-- in microseconds). Strictly greater than every token handed out before for this name while the
-- server clock does not go back; it grows across idle periods without a key kept forever, and stays
-- below 2^53 (a JavaScript safe integer) until the year 2255.
-- The fence key is needed only while the last token may not be below the clock: a token taken from
-- the clock is passed by it within a microsecond, one raised to last + 1 (a burst within one
-- microsecond, or a clock that stepped back) once the clock reaches it. So it lives that long, in
-- whole ms, plus fenceMemoryMs (a margin: the script's own run time, a replica's clock a little
-- behind after a failover), and is then gone (see docs/architecture.md#fencing-tokens).
-- Expects  time (the reply of TIME), fenceKey, fenceMemoryMs (the margin, in ms)
-- Defines  token (a number), tokenText (its decimal text, as stored)

-- Written as the token at once (SET ... GET answers the last one: one call on the usual path);
-- only when the last token is not below the clock is it raised to last + 1, kept until the clock
-- passes it.
local tokenText = time[1] .. string.format('%06d', tonumber(time[2]))
local token = tonumber(tokenText)
local last = tonumber(redis.call('set', fenceKey, tokenText, 'px', fenceMemoryMs, 'get')) or 0
if last >= token then
  local clock = token
  token = last + 1
  tokenText = string.format('%.0f', token)
  redis.call('set', fenceKey, tokenText, 'px', math.ceil((token - clock) / 1000) + tonumber(fenceMemoryMs))
end
