-- raise.lua: raise the fencing epoch to at least a floor, never lowering
-- it, and fence the job store at the epoch. For an operator repairing the
-- epoch, say after a restore from an old backup made tokens start again
-- below ones already used.
--
-- KEYS[1] epoch key K:epoch      (plain integer counter)
-- KEYS[2] epoch tag K:epoch:last ("<sha1 of the value>:<token>" of the last bump)
-- KEYS[3] fence key K:epoch:fence (the lowest token the job store accepts)
-- ARGV[1] the floor N, a non-negative integer
--
-- Returns {epoch before, epoch after}. The fence becomes at least the epoch
-- after, so every token below it is rejected from now on, and every token
-- handed out after the raise is above N. When it raises, it also forgets
-- the tag, so a re-sent bump of the last leadership bumps afresh.
local function int(key)
  local raw = redis.call('GET', key)
  if not raw then
    return 0
  end
  local n = tonumber(raw)
  if not n then
    return nil, redis.error_reply('redislock: key ' .. key .. ' is not an integer')
  end
  return n
end
local before, err = int(KEYS[1])
if not before then
  return err
end
local fence, ferr = int(KEYS[3])
if not fence then
  return ferr
end
local after = before
local floor = tonumber(ARGV[1])
if floor > before then
  after = floor
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[2])
end
if after > fence then
  redis.call('SET', KEYS[3], string.format('%d', after))
end
return {before, after}
