-- epoch.lua (after bump.lua): bump the fencing epoch once per lock value, on
-- the epoch authority, for an attempt that won its quorum without the
-- authority's own grant.
--
-- KEYS[1] epoch key K:epoch      (plain integer counter)
-- KEYS[2] epoch tag K:epoch:last ("<sha1 of the value>:<token>" of the last bump here)
-- KEYS[3] lock key K             (on the authority, when it is also a lock node)
-- KEYS[4] fence key K:epoch:fence (the lowest token the job store accepts)
-- ARGV[1] the attempt's prefix "<secret>:"
-- ARGV[2] the floor: the highest token the caller has observed (see acquire.lua)
--
-- Returns {token, recorded, seen}: seen is the epoch found before the bump; the token is the new epoch, or, when this value
-- got the last bump (a re-sent call), the same token without bumping.
-- recorded is 1 when K here holds this attempt and now carries the token
-- (saving a round trip for Holder), else 0. The quorum is won, so no other
-- lease is valid: the fence goes up to the token here, where the WAIT step
-- makes it outlive a failover, as the bump does.
local seen = tonumber(redis.call('GET', KEYS[1])) or 0
local floor = tonumber(ARGV[2]) or 0
if floor > seen then
  redis.call('SET', KEYS[1], string.format('%d', floor))
end
local token = bump(KEYS[1], KEYS[2], ARGV[1])
if token > (tonumber(redis.call('GET', KEYS[4])) or 0) then
  redis.call('SET', KEYS[4], token)
end
local cur = redis.call('GET', KEYS[3])
if ours(cur, ARGV[1]) then
  local _, worker = holder(cur)
  redis.call('SET', KEYS[3], ARGV[1] .. token .. ':' .. worker, 'KEEPTTL')
  return {token, 1, seen}
end
return {token, 0, seen}
