-- release.lua: compare-and-delete, and tell waiters.
--
-- KEYS[1] lock key K
-- KEYS[2] holder key K:holder
-- ARGV[1] lock value
-- ARGV[2] release channel K:released, or "" to delete without telling
-- ARGV[3] worker ID, published on ARGV[2]
-- ARGV[4] "1" to publish with SPUBLISH (Redis Cluster sharded pub/sub: the
--         channel shares K's slot), else PUBLISH
--
-- Returns 1 when it deleted (and published, unless ARGV[2] is ""), 0 when K
-- did not hold ARGV[1].
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2])
if ARGV[2] ~= '' then
  if ARGV[4] == '1' then
    redis.call('SPUBLISH', ARGV[2], ARGV[3])
  else
    redis.call('PUBLISH', ARGV[2], ARGV[3])
  end
end
return 1
