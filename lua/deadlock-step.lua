-- One step of a cross-process deadlock check (docs/deadlocks.md#across-processes-after-deadlockcheckafter):
-- the holders of one lock that a wait for it needs released, each with the wait-for records its call
-- chain keeps beside this lock. Read-only.
-- KEYS[1]  the lock's main key: a lock hash (field <owner id> = hold count), a read-write hash
--          (writer, read:<owner id>), or a semaphore hash (permits, o:<permit id>, w:<permit id>)
-- KEYS[2]  its line: a list of entries ('<owner id> <request> <lease> <kind>'; a semaphore's: permit ids)
-- KEYS[3]  the line's deadlines: sorted set entry -> deadline on the server clock
-- KEYS[4]  the line's last attempts (lock, read-write: '~dead:<client id>' marks a dead client); a
--          semaphore passes its main key again
-- KEYS[5]  the holders' leases (read-write, semaphore: sorted set owner -> deadline); a lock passes
--          its main key again
-- KEYS[6]  the wait-for records kept beside this lock: hash '<owner id> <wait id>' ->
--          '<deadline> <wait start> <record>'
-- ARGV[1]  the lock's layout: 'lock', 'readWrite' or 'semaphore'
-- ARGV[2]  the waiting owner (never its own blocker)
-- ARGV[3]  the wait's line entry ('' when it has none: nobody counts as ahead of it)
-- ARGV[4]  the wait's mode: 'exclusive', 'read', 'write' or 'permits'
-- ARGV[5]  permits asked for (semaphore)
-- ARGV[6]  how many line entries, and how many holders, to look at, at most (a lock with more is
--          seen in part: edges missed, never one too many)
-- Returns  { now, owner, via, n, record 1, ..., record n, owner, via, n, ... } for each holder the
--          wait needs released: via is '' or the owner of the entry ahead it is needed through; the
--          records are '<wait start> <record>' (expired ones are left out)
local mainKey = KEYS[1]
local lineKey = KEYS[2]
local deadlinesKey = KEYS[3]
local seenKey = KEYS[4]
local leasesKey = KEYS[5]
local recordsKey = KEYS[6]
local kind = ARGV[1]
local waitingOwner = ARGV[2]
local myEntry = ARGV[3]
local mode = ARGV[4]
local need = tonumber(ARGV[5])
local lineBudget = tonumber(ARGV[6])

-- #include server-clock

-- The live holders: owner -> { write = bool, permits = n }.
local holders = {}
local holderOrder = {}
local function addHolder(owner, write, permits)
  if owner == waitingOwner or holders[owner] then return end
  holders[owner] = { write = write, permits = permits }
  holderOrder[#holderOrder + 1] = owner
end
local total = 1
if kind == 'lock' then
  local fields = redis.call('hgetall', mainKey)
  for i = 1, #fields, 2 do
    local field = fields[i]
    if string.match(field, '^%S+:%d+$') and tonumber(fields[i + 1]) then
      addHolder(field, true, 1)
    end
  end
elseif kind == 'readWrite' then
  local writer = redis.call('hget', mainKey, 'writer')
  for _, owner in ipairs(redis.call('zrangebyscore', leasesKey, '(' .. string.format('%.0f', now), '+inf', 'LIMIT', 0, lineBudget)) do
    addHolder(owner, owner == writer, 1)
  end
else
  total = tonumber(redis.call('hget', mainKey, 'permits')) or 0
  for _, owner in ipairs(redis.call('zrangebyscore', leasesKey, '(' .. string.format('%.0f', now), '+inf', 'LIMIT', 0, lineBudget)) do
    addHolder(owner, true, tonumber(redis.call('hget', mainKey, 'o:' .. owner)) or 0)
  end
end
if #holderOrder == 0 then
  return { now }
end

-- The one entry ahead that decides what the line adds (every other entry ahead needs a subset of
-- what it needs): for a reader, the first live writer ahead (it needs every holder); for permits,
-- the live entry ahead asking for the most (a holder one entry needs, a bigger one needs too).
-- One pass over at most lineBudget entries, then one over the holders: never a loop inside a loop.
local decisive = false
if mode == 'read' or mode == 'permits' then
  local entries = redis.call('lrange', lineKey, 0, lineBudget - 1)
  local found = false
  for _, entry in ipairs(entries) do
    if entry == myEntry then
      found = true
      break
    end
    local deadline = tonumber(redis.call('zscore', deadlinesKey, entry))
    if deadline and deadline > now then
      if kind == 'semaphore' then
        local asked = tonumber(redis.call('hget', mainKey, 'w:' .. entry)) or 0
        if not decisive or asked > decisive.need then
          decisive = { owner = entry, mode = 'permits', need = asked }
        end
      elseif not decisive then
        local owner, entryKind = string.match(entry, '^(%S+) %S+ %d+ ([pfrw])$')
        local client = owner and string.match(owner, '^(%S+):%d+$')
        -- A reader passes the readers ahead (they are admitted together), never a writer.
        if owner and entryKind ~= 'r' and not (client and redis.call('hexists', seenKey, '~dead:' .. client) == 1) then
          decisive = { owner = owner, mode = 'write', need = 1 }
        end
      end
    end
  end
  -- A wait whose entry is not in (the first part of) the line cannot tell who stands ahead of it:
  -- nobody is counted (a missed edge is found later; an edge too many would refuse a live wait).
  if not found then
    decisive = false
  end
end

-- Whether a wait in `waitMode` asking `asked` needs `holder` released.
local function needs(holder, waitMode, asked)
  if waitMode == 'read' then return holder.write end
  if waitMode == 'permits' then return total - holder.permits < asked end
  return true
end

local blockers = {}
local blockerOrder = {}
for _, owner in ipairs(holderOrder) do
  local via = false
  if needs(holders[owner], mode, need) then
    via = ''
  elseif decisive and owner ~= decisive.owner and needs(holders[owner], decisive.mode, decisive.need) then
    via = decisive.owner
  end
  if via then
    blockers[owner] = via
    blockerOrder[#blockerOrder + 1] = owner
  end
end

-- Each blocker's records: '<owner> <wait id>' -> '<deadline> <wait start> <record>'.
local records = {}
local all = redis.call('hgetall', recordsKey)
for i = 1, #all, 2 do
  local owner = string.match(all[i], '^(%S+) ')
  local deadline, record = string.match(all[i + 1], '^(%d+) (.*)$')
  if owner and blockers[owner] and (tonumber(deadline) or 0) > now then
    records[owner] = records[owner] or {}
    table.insert(records[owner], record)
  end
end

local reply = { now }
for _, owner in ipairs(blockerOrder) do
  local own = records[owner] or {}
  reply[#reply + 1] = owner
  reply[#reply + 1] = blockers[owner]
  reply[#reply + 1] = #own
  for _, record in ipairs(own) do
    reply[#reply + 1] = record
  end
end
return reply
