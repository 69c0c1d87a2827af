-- bump.lua: put before epoch.lua by scripts.go (after value.lua).

-- bump increments the counter epochKey once per lock value and returns the
-- token: the new epoch, or, when value got the last bump and no token was
-- minted since (tagKey holds "<sha1 of value>:<token>" and the epoch is
-- still that token: a re-sent call), the same token again.
local function bump(epochKey, tagKey, value)
  local tag = redis.sha1hex(value)
  local cur = redis.call('GET', epochKey)
  if cur and redis.call('GET', tagKey) == tag .. ':' .. cur then
    return tonumber(cur)
  end
  local token = redis.call('INCR', epochKey)
  redis.call('SET', tagKey, tag .. ':' .. token)
  return token
end

