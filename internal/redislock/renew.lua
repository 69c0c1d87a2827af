-- renew.lua: compare-and-pexpire. Never creates K.
--
-- KEYS[1] lock key K
-- ARGV[1] the lease's prefix "<secret>:" (K holds "<secret>:<token>:<worker>")
-- ARGV[2] TTL in milliseconds
--
-- Returns 1 when K held this lease and got the new TTL, 0 otherwise (K
-- missing or held by another value; nothing is changed).
local cur = redis.call('GET', KEYS[1])
-- The prefix must end with ':', which the secret cannot contain, so no part
-- of a secret matches.
if not cur or string.byte(ARGV[1], -1) ~= 58 or string.sub(cur, 1, #ARGV[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
