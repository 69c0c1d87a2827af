-- epoch.lua (after bump.lua): bump the fencing epoch once per lock value, on
-- the epoch authority, for an attempt that won its quorum without the
-- authority's own grant.
--
-- KEYS[1] epoch key K:epoch      (plain integer counter)
-- KEYS[2] epoch tag K:epoch:last ("<sha1 of the value>:<token>" of the last bump here)
-- KEYS[3] lock key K             (on the authority, when it is also a lock node)
-- ARGV[1] the attempt's prefix "<secret>:"
--
-- Returns {token, recorded}: the token is the new epoch, or, when this value
-- got the last bump (a re-sent call), the same token without bumping.
-- recorded is 1 when K here holds this attempt and now carries the token
-- (saving a round trip for Holder), else 0.
local token = bump(KEYS[1], KEYS[2], ARGV[1])
local cur = redis.call('GET', KEYS[3])
if ours(cur, ARGV[1]) then
  local _, worker = holder(cur)
  redis.call('SET', KEYS[3], ARGV[1] .. token .. ':' .. worker, 'KEEPTTL')
  return {token, 1}
end
return {token, 0}
