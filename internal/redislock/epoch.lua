-- epoch.lua: bump the fencing epoch once per lock value, on the epoch authority.
--
-- KEYS[1] epoch key K:epoch      (plain integer counter, read by the job store)
-- KEYS[2] epoch tag K:epoch:last (sha1 of the value that got the last bump)
-- ARGV[1] the lock value of the attempt that won the quorum
--
-- Returns the token: the new epoch, or, when this value already got the
-- last bump (a re-sent call), the same epoch again without bumping.
local tag = redis.sha1hex(ARGV[1])
local cur = redis.call('GET', KEYS[1])
if cur and redis.call('GET', KEYS[2]) == tag then
  return tonumber(cur)
end
local token = redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[2], tag)
return token
