-- readepoch.lua: the current fencing epoch.
--
-- KEYS[1] epoch key K:epoch
--
-- Returns the epoch, 0 when it was never bumped.
return tonumber(redis.call('GET', KEYS[1])) or 0
