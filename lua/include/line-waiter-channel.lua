-- The channel on which a waiter in line hears of its grant: a fair waiter's own (the lock's channel
-- plus its owner id), any other's process's (the lock's channel plus the client id of its owner id
-- '<client id>:<n>'). A grant wakes only the process whose waiter it names.
-- Expects  channel (the lock's channel)
-- Defines  waiterChannelOf(kind, owner)

local function waiterChannelOf(kind, owner)
  if kind == 'f' then
    return channel .. ':' .. owner
  end
  return channel .. ':' .. (string.match(owner, '^(.*):%d+$') or owner)
end
