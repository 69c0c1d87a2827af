-- acquire.lua (after bump.lua): take the lock on one node, idempotently for one attempt.
--
-- KEYS[1] lock key K            (holds "<secret>:<token>:<worker>")
-- KEYS[2] epoch key K:epoch     (fencing counter; used only when ARGV[4] ~= "0")
-- KEYS[3] fence key K:epoch:fence (the lowest token the job store accepts; ARGV[4] == "2")
-- ARGV[1] the attempt's prefix "<secret>:" (secret random, >= 128 bits, no ':')
-- ARGV[2] TTL in milliseconds
-- ARGV[3] worker ID (for people; never compared)
-- ARGV[4] "0": no token here; "1" (the epoch authority among Redlock nodes):
--         mint the token when granting; "2" (the authority is the only node,
--         so its grant is the leadership): mint it and raise the fence to it,
--         which a failover then keeps (the WAIT step covers this script)
--
-- Returns {1, token} when K holds this attempt after the call (a re-sent
-- call refreshes the TTL and returns the same token; token 0 where none was
-- minted), or {0, pttl} when K is held by another value (pttl -1: no TTL).
-- A mint needs no tag: the token lives in K, and the tag epoch.lua checks
-- names the token it gave, which this INCR makes stale.
local cur = redis.call('GET', KEYS[1])
if cur then
  if ours(cur, ARGV[1]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, (holder(cur))}
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
local token = 0
if ARGV[4] ~= '0' then
  token = redis.call('INCR', KEYS[2])
  if ARGV[4] == '2' then
    redis.call('SET', KEYS[3], token)
  end
end
redis.call('SET', KEYS[1], ARGV[1] .. token .. ':' .. ARGV[3], 'PX', ARGV[2])
return {1, token}
