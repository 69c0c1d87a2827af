-- bump.lua: put before acquire.lua and epoch.lua by scripts.go, so the
-- fencing epoch is bumped by one piece of code in both modes.

-- bump increments the counter epochKey once per lock value and returns the
-- token: the new epoch, or, when value already got the last bump (tagKey
-- holds its sha1: a re-sent call), the same epoch again without bumping.
local function bump(epochKey, tagKey, value)
  local tag = redis.sha1hex(value)
  local cur = redis.call('GET', epochKey)
  if cur and redis.call('GET', tagKey) == tag then
    return tonumber(cur)
  end
  local token = redis.call('INCR', epochKey)
  redis.call('SET', tagKey, tag)
  return token
end

