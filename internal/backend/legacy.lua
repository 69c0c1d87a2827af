-- legacy.lua: move the keys an older lockworker used for an untagged
-- LOCK_KEY K (before hash tags) to the tagged names of K' = {K}, on the
-- Redis that holds the epoch and the queue. Atomic: a fenced write of the
-- old names and the move never interleave.
--
-- KEYS[1]  old lock K                 KEYS[2]  old holder K:holder
-- KEYS[3]  old epoch K:epoch          KEYS[4]  new epoch K':epoch
-- KEYS[5]  old K:jobs:stream          KEYS[6]  new K':jobs:stream
-- KEYS[7]  old K:jobs:position        KEYS[8]  new K':jobs:position
-- KEYS[9]  old K:jobs:attempts        KEYS[10] new K':jobs:attempts
-- KEYS[11] old K:jobs:counters        KEYS[12] new K':jobs:counters
-- KEYS[13] old K:jobs:last            KEYS[14] new K':jobs:last
-- KEYS[15] old K:jobs:dead            KEYS[16] new K':jobs:dead
-- ARGV[1] "check" (report only) or "move"
-- ARGV[2] the mark left in the old lock and the old stream
-- ARGV[3] old dead-record prefix K:jobs:dead:   (records are not in KEYS:
-- ARGV[4] new dead-record prefix K':jobs:dead:   their IDs are read here)
--
-- Returns {"done"}          moved before (the old stream holds the mark)
--       | {"none"}          no key of an older lockworker
--       | {"busy", pttl}    an older lockworker holds the old lock
--       | {"conflict", key} a new key exists where an old one would go
--       | {"pending"}       "check": there is something to move
--       | {"moved", epoch, deadRecords}
local mark = ARGV[2]
local function marked(k)
  return redis.call('TYPE', k).ok == 'string' and redis.call('GET', k) == mark
end

if marked(KEYS[5]) then
  return {'done'}
end
if redis.call('EXISTS', KEYS[3], KEYS[5], KEYS[7], KEYS[9], KEYS[11], KEYS[13], KEYS[15]) == 0 then
  return {'none'}
end
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= mark then
  return {'busy', redis.call('PTTL', KEYS[1])}
end
for i = 5, 15, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 and redis.call('EXISTS', KEYS[i + 1]) == 1 then
    return {'conflict', KEYS[i + 1]}
  end
end
if ARGV[1] == 'check' then
  return {'pending'}
end

-- Tokens must not go back: the new epoch starts at the old one.
local old = tonumber(redis.call('GET', KEYS[3]) or '0') or 0
if old > (tonumber(redis.call('GET', KEYS[4]) or '0') or 0) then
  redis.call('SET', KEYS[4], old)
end
local ids = {}
if redis.call('EXISTS', KEYS[15]) == 1 then
  ids = redis.call('ZRANGE', KEYS[15], 0, -1)
end
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[3] .. id) == 1 then
    redis.call('RENAME', ARGV[3] .. id, ARGV[4] .. id)
  end
end
for i = 5, 15, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 1])
  end
end
-- The old epoch stays, so an older lockworker's fencing still holds. The
-- marks make sure no older lockworker leads again (the old lock is taken
-- for good) and that an older producer's enqueue fails (XADD on a string)
-- instead of filling a queue nobody reads.
redis.call('SET', KEYS[1], mark)
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[5], mark)
return {'moved', old, #ids}
