-- acquire.lua (after bump.lua): take the lock on one node, idempotently for one attempt.
--
-- KEYS[1] lock key K            (holds "<secret>:<token>:<worker>")
-- KEYS[2] epoch key K:epoch     (fencing counter; used only when ARGV[4] == "1")
-- ARGV[1] the attempt's prefix "<secret>:" (secret random, >= 128 bits, no ':')
-- ARGV[2] TTL in milliseconds
-- ARGV[3] worker ID (for people; never compared)
-- ARGV[4] "1" on the epoch authority: mint the token here when granting, else "0"
-- ARGV[5] the floor: the highest token the caller has observed; a mint raises
--         the epoch to it first, so the token is above every token observed
--         even after Redis lost the epoch (a flush, an eviction)
--
-- Returns {1, token, seen} when K holds this attempt after the call (a
-- re-sent call refreshes the TTL and returns the same token; token 0 where
-- none was minted): seen is the epoch found before the mint (-1 when none
-- was minted); or {0, pttl, held} when K is held by another value (pttl -1:
-- no TTL), held being the token its value carries (0 when none).
-- A mint needs no tag: the token lives in K, and the tag epoch.lua checks
-- names the token it gave, which this INCR makes stale.
local cur = redis.call('GET', KEYS[1])
if cur then
  if ours(cur, ARGV[1]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, (holder(cur)), -1}
  end
  return {0, redis.call('PTTL', KEYS[1]), (holder(cur))}
end
local token, seen = 0, -1
if ARGV[4] == '1' then
  seen = tonumber(redis.call('GET', KEYS[2])) or 0
  local floor = tonumber(ARGV[5]) or 0
  if floor > seen then
    redis.call('SET', KEYS[2], string.format('%d', floor))
  end
  token = redis.call('INCR', KEYS[2])
end
redis.call('SET', KEYS[1], ARGV[1] .. token .. ':' .. ARGV[3], 'PX', ARGV[2])
return {1, token, seen}
