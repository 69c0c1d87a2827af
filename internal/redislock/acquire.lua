-- acquire.lua (after bump.lua): take the lock on one node, idempotently for one attempt value.
--
-- KEYS[1] lock key K            (holds the attempt's random value)
-- KEYS[2] holder key K:holder   (hash {worker, token}, same TTL as K)
-- KEYS[3] epoch key K:epoch     (fencing counter; used only when ARGV[4] == "1")
-- KEYS[4] epoch tag K:epoch:last (sha1 of the value that got the last bump)
-- ARGV[1] attempt value (random, >= 128 bits)
-- ARGV[2] TTL in milliseconds
-- ARGV[3] worker ID (for people; never compared)
-- ARGV[4] "1" to bump the epoch here (single node that is its own epoch authority), else "0"
--
-- Returns {1, token} when K holds ARGV[1] after the call (a re-sent call with
-- the same value refreshes the TTL and returns the same token), or
-- {0, pttl} when K is held by another value (pttl is -1 when K has no TTL).
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return {1, tonumber(redis.call('HGET', KEYS[2], 'token')) or 0}
end
if cur then
  return {0, redis.call('PTTL', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local token = 0
if ARGV[4] == '1' then
  token = bump(KEYS[3], KEYS[4], ARGV[1])
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'worker', ARGV[3], 'token', token)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {1, token}
