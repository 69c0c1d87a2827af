-- epoch.lua (after bump.lua): bump the fencing epoch once per lock value, on the epoch authority.
--
-- KEYS[1] epoch key K:epoch      (plain integer counter, read by the job store)
-- KEYS[2] epoch tag K:epoch:last (sha1 of the value that got the last bump)
-- KEYS[3] lock key K             (on the authority, when it is also a lock node)
-- KEYS[4] holder key K:holder
-- ARGV[1] the lock value of the attempt that won the quorum
--
-- Returns {token, recorded}: the token is the new epoch, or, when this value
-- already got the last bump (a re-sent call), the same epoch again without
-- bumping. recorded is 1 when K here holds ARGV[1] and the token was written
-- into K:holder (saving a round trip for Holder), else 0.
local token = bump(KEYS[1], KEYS[2], ARGV[1])
if redis.call('GET', KEYS[3]) == ARGV[1] then
  redis.call('HSET', KEYS[4], 'token', token)
  return {token, 1}
end
return {token, 0}
