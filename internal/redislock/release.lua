-- release.lua: compare-and-delete, and tell waiters.
--
-- KEYS[1] lock key K
-- ARGV[1] the lease's prefix "<secret>:" (K holds "<secret>:<token>:<worker>")
-- ARGV[2] release channel K:released, or "" to delete without telling
-- ARGV[3] worker ID, published on ARGV[2]
-- ARGV[4] "1" to publish with SPUBLISH (Redis Cluster sharded pub/sub: the
--         channel shares K's slot), else PUBLISH
--
-- Returns 1 when it deleted (and published, unless ARGV[2] is ""), 0 when K
-- did not hold this lease.
local cur = redis.call('GET', KEYS[1])
-- The prefix must end with ':', which the secret cannot contain, so no part
-- of a secret matches.
if not cur or string.byte(ARGV[1], -1) ~= 58 or string.sub(cur, 1, #ARGV[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if ARGV[2] ~= '' then
  if ARGV[4] == '1' then
    redis.call('SPUBLISH', ARGV[2], ARGV[3])
  else
    redis.call('PUBLISH', ARGV[2], ARGV[3])
  end
end
return 1
