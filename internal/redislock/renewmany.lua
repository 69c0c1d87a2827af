-- renewmany.lua: compare-and-pexpire of many leases in one script (one
-- replica's partitions on one node, one round trip). Never creates a key.
-- Not for Redis Cluster, where the keys hash to different slots.
--
-- KEYS[i]   the lock key of lease i
-- ARGV[1]   TTL in milliseconds, the same for every lease
-- ARGV[1+i] lease i's prefix "<secret>:" (its key holds "<secret>:<token>:<worker>")
--
-- Returns one integer per lease, in order: 1 when the key held the lease
-- and got the new TTL, 0 when it was missing or held another value
-- (nothing changed).
local cur = redis.call('MGET', unpack(KEYS))
local out = {}
for i = 1, #KEYS do
  local p, v = ARGV[i + 1], cur[i]
  -- The prefix must end with ':', which the secret cannot contain, so no
  -- part of a secret matches.
  if v and string.byte(p, -1) == 58 and string.sub(v, 1, #p) == p then
    redis.call('PEXPIRE', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
