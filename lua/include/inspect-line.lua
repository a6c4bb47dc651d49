-- The live entries of an inspected lock's or semaphore's waiting line, in line order, each once, at
-- most waiterLimit of them, and how many live entries the line holds in all. The line list keeps
-- tombstones (entries without a deadline) and may hold an entry twice (a tombstone, then pushed
-- again; see line-live-head); every live entry has one deadline, so their number is one ZCOUNT,
-- whatever the line's length. With a limit, the list is read in slices from its head and at most
-- 10 * waiterLimit + 1000 entries are looked at (tombstones included): the script's work stays
-- bounded however long the line is (fewer than waiterLimit may be listed behind that many
-- tombstones; lineCount still counts them all).
-- Expects  lineKey, deadlinesKey (nil or false: no line), now, waiterLimit (0: every entry)
-- Defines  lineEntries (the live entries listed), lineCount (live entries in all)

local lineEntries = {}
local lineCount = 0
if lineKey and deadlinesKey then
  lineCount = redis.call('zcount', deadlinesKey, '(' .. string.format('%.0f', now), '+inf')
  local listed = {}
  local function consider(entry)
    local deadline = redis.call('zscore', deadlinesKey, entry)
    if deadline and tonumber(deadline) > now and not listed[entry] then
      listed[entry] = true
      table.insert(lineEntries, entry)
    end
  end
  if waiterLimit > 0 then
    local looked = 0
    local budget = 10 * waiterLimit + 1000
    while #lineEntries < waiterLimit and looked < budget do
      local want = math.min(math.max(waiterLimit, 100), budget - looked)
      local slice = redis.call('lrange', lineKey, looked, looked + want - 1)
      for _, entry in ipairs(slice) do
        if #lineEntries < waiterLimit then consider(entry) end
      end
      looked = looked + want
      if #slice < want then break end
    end
  else
    for _, entry in ipairs(redis.call('lrange', lineKey, 0, -1)) do consider(entry) end
  end
end
