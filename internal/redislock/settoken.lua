-- settoken.lua (after bump.lua): record the fencing token in the lock value, if K is still ours.
--
-- KEYS[1] lock key K
-- ARGV[1] the lease's prefix "<secret>:"
-- ARGV[2] token
--
-- Returns 1 when recorded (the TTL is kept), 0 when K no longer holds this lease.
local cur = redis.call('GET', KEYS[1])
if not ours(cur, ARGV[1]) then
  return 0
end
local _, worker = holder(cur)
redis.call('SET', KEYS[1], ARGV[1] .. ARGV[2] .. ':' .. worker, 'KEEPTTL')
return 1
