-- skip.lua: an operator's skip of a parked group: its failing job goes to
-- the dead letters, recorded as skipped (by whom, why), and its held jobs
-- are released in order. Not fenced: the group is not claimed by anyone
-- while it is parked. Names are keyspace's (its doc.go holds the layout).
--
-- KEYS[1] J:parked
-- KEYS[2] J:ready
-- KEYS[3] J:attempts
-- KEYS[4] J:stale
-- KEYS[5] J:dead
-- KEYS[6] J:counters
-- ARGV[1] the group's member
-- ARGV[2] the failing job's ID the caller saw, or "" for whichever it is
-- ARGV[3] now, unix milliseconds
-- ARGV[4] the prefix of the group lists (J:g:)
-- ARGV[5] the prefix of the dead-letter records (J:dead:)
-- ARGV[6] who skipped it
-- ARGV[7] why
-- ARGV[8] the prefix of the idempotency keys (J:idem:)
-- ARGV[9] how long an idempotency key lives once its job finished (ms)
--
-- Returns the skipped job's ID, or false when the group is not parked (or
-- is parked on another job than ARGV[2]).
local rec = redis.call('HGET', KEYS[1], ARGV[1])
if not rec then
  return false
end
local p = cjson.decode(rec)
local id = p.jobId
if ARGV[2] ~= '' and id ~= ARGV[2] then
  return false
end
local list = ARGV[4] .. ARGV[1]
-- The failing job is the head, unless requeued jobs went before it.
local entry
for _, e in ipairs(redis.call('LRANGE', list, 0, 99)) do
  if string.match(e, '^%S+ (%S+)') == id then
    entry = e
    break
  end
end
if not entry then
  return redis.error_reply('jobs: parked job ' .. id .. ' is not among the first 100 of its group')
end
redis.call('LREM', list, 1, entry)
local idem = string.match(string.match(entry, '^[^\n]*'), ' idem=(%S+)')
if idem and redis.call('GET', ARGV[8] .. idem) == id then
  redis.call('PEXPIRE', ARGV[8] .. idem, ARGV[9])
end
local dead = ARGV[5] .. id
redis.call('DEL', dead)
redis.call('HSET', dead, 'id', id, 'entry', entry, 'member', ARGV[1], 'error', p.error or '',
  'attempts', p.attempts or 0, 'failed_at', ARGV[3], 'token', p.token or 0,
  'skipped_by', ARGV[6], 'reason', ARGV[7])
redis.call('ZADD', KEYS[5], ARGV[3], id)
redis.call('HINCRBY', KEYS[6], 'dead_lettered', 1)
redis.call('HINCRBY', KEYS[6], 'pending', -1)
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
local head = redis.call('LINDEX', list, 0)
if head then
  -- Its place: its due time, or its enqueue time (step.lua's placeOf).
  local h = string.match(head, '^[^\n]*')
  redis.call('ZADD', KEYS[2], string.match(h, ' due=(%d+)') or string.match(h, '^%S+ %S+ (%d+)'), ARGV[1])
end
return id
