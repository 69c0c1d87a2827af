-- holder.lua: who holds the lock on this node, without the lock value.
--
-- KEYS[1] lock key K
-- KEYS[2] holder key K:holder
--
-- Returns {pttl, worker, token}: pttl of K (-2 when K is missing, -1 when it
-- has no TTL), and the holder hash's worker ("" when absent) and token.
local pttl = redis.call('PTTL', KEYS[1])
local h = redis.call('HMGET', KEYS[2], 'worker', 'token')
return {pttl, h[1] or '', tonumber(h[2]) or 0}
