-- settoken.lua: record the fencing token in the holder hash, if K is still ours.
--
-- KEYS[1] lock key K
-- KEYS[2] holder key K:holder
-- ARGV[1] lock value
-- ARGV[2] token
--
-- Returns 1 when recorded, 0 when K no longer holds ARGV[1].
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[2], 'token', ARGV[2])
return 1
