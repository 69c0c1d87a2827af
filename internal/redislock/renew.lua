-- renew.lua: compare-and-pexpire. Never creates K.
--
-- KEYS[1] lock key K
-- KEYS[2] holder key K:holder
-- ARGV[1] lock value
-- ARGV[2] TTL in milliseconds
--
-- Returns 1 when K held ARGV[1] and both keys got the new TTL, 0 otherwise
-- (K missing or held by another value; nothing is changed).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
