-- holder.lua (after bump.lua): who holds the lock on this node, without its secret.
--
-- KEYS[1] lock key K
--
-- Returns {pttl, worker, token}: pttl of K (-2 when K is missing, -1 when it
-- has no TTL), and the worker and token recorded in K's value ("" and 0
-- when absent or in another format).
local cur = redis.call('GET', KEYS[1])
if not cur then
  return {-2, '', 0}
end
local token, worker = holder(cur)
return {redis.call('PTTL', KEYS[1]), worker, token}
