-- reissue.lua: a new token, above a floor, for the lease holding a value.
-- The epoch is raised to the floor when it is below (never lowered), then
-- bumped; the tag then names this value, so a re-sent bump for it returns
-- this same token.
--
-- KEYS[1] epoch key K:epoch      (plain integer counter)
-- KEYS[2] epoch tag K:epoch:last ("<sha1 of the value>:<token>" of the last bump)
-- KEYS[3] fence key K:epoch:fence (the lowest token the job store accepts)
-- ARGV[1] the lease's prefix "<secret>:"
-- ARGV[2] the floor, a non-negative integer
--
-- Returns {token}: the new token, above both the floor and the epoch it
-- found. The fence goes up to it: the lease is held, so older tokens are
-- done.
local raw = redis.call('GET', KEYS[1])
local cur = 0
if raw then
  cur = tonumber(raw)
  if not cur then
    return redis.error_reply('redislock: epoch key ' .. KEYS[1] .. ' is not an integer')
  end
end
if tonumber(ARGV[2]) > cur then
  redis.call('SET', KEYS[1], ARGV[2])
end
local token = redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[2], redis.sha1hex(ARGV[1]) .. ':' .. token)
if token > (tonumber(redis.call('GET', KEYS[3])) or 0) then
  redis.call('SET', KEYS[3], token)
end
return {token}
