-- tombstone.lua: take the old lock K of an older lockworker for good on a
-- Redlock node, so no older replica can win a quorum again.
--
-- KEYS[1] old lock K
-- KEYS[2] old holder K:holder
-- ARGV[1] the mark
--
-- Returns {"ok"} when K holds the mark now, {"busy", pttl} when an older
-- lockworker holds it.
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then
  return {'busy', redis.call('PTTL', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return {'ok'}
