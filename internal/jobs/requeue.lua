-- requeue.lua: moves a dead letter back to its group as a new job: to the
-- head (before the group's other jobs; after its run in flight, if one
-- is), or to the tail. Not fenced: like an enqueue, anyone may do it.
-- Names are keyspace's (its doc.go holds the layout).
--
-- KEYS[1] J:dead
-- KEYS[2] J:dead:<id> of the dead job
-- KEYS[3] J:ready
-- KEYS[4] J:inflight
-- KEYS[5] J:counters
-- ARGV[1] the dead job's ID
-- ARGV[2] the new job's ID
-- ARGV[3] now, unix milliseconds
-- ARGV[4] the prefix of the group lists (J:g:)
-- ARGV[5] head or tail
--
-- Returns the group's member, or false when there is no such dead letter.
local rec = redis.call('HMGET', KEYS[2], 'entry', 'member')
local entry, member = rec[1], rec[2]
if not entry or not member then
  return false
end
local nl = string.find(entry, '\n', 1, true)
if not nl then
  return redis.error_reply('jobs: dead letter ' .. ARGV[1] .. ' holds a malformed entry')
end
local new = '1 ' .. ARGV[2] .. ' ' .. ARGV[3] .. ' from=' .. ARGV[1] .. string.sub(entry, nl)
local list = ARGV[4] .. member
local was = redis.call('LLEN', list)
local claim = redis.call('HGET', KEYS[4], member)
if ARGV[5] == 'tail' or was == 0 then
  redis.call('RPUSH', list, new)
elseif claim then
  -- After the run in flight: it finishes first, then the requeued job.
  local count = tonumber(string.match(claim, '^%S+ %S+ (%d+)'))
  redis.call('LINSERT', list, 'AFTER', redis.call('LINDEX', list, count - 1), new)
else
  -- Ready, backing off or parked: first of what waits, in the same place.
  redis.call('LPUSH', list, new)
end
if was == 0 then
  redis.call('ZADD', KEYS[3], ARGV[3], member)
end
redis.call('HINCRBY', KEYS[5], 'pending', 1)
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[1], ARGV[1])
return member
