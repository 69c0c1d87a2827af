-- raise.lua: raise the fencing epoch to at least a floor; never lower it.
-- For an operator repairing the epoch, say after a restore from an old
-- backup made tokens start again below ones already used.
--
-- KEYS[1] epoch key K:epoch      (plain integer counter)
-- KEYS[2] epoch tag K:epoch:last (sha1 of the value that got the last bump)
-- ARGV[1] the floor N, a non-negative integer
--
-- Returns {epoch before, epoch after}. When it raises, it also forgets the
-- tag, so a re-sent bump of the last leadership bumps afresh to N+1 instead
-- of handing out N: every token after the raise is above N.
local raw = redis.call('GET', KEYS[1])
local before = 0
if raw then
  before = tonumber(raw)
  if not before then
    return redis.error_reply('redislock: epoch key ' .. KEYS[1] .. ' is not an integer')
  end
end
local floor = tonumber(ARGV[1])
if floor > before then
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[2])
  return {before, floor}
end
return {before, before}
