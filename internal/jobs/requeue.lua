-- requeue.lua: move a dead letter back to the tail of the queue as a new
-- job, with its ordering key. Not fenced: like an enqueue, anyone may do it.
--
-- KEYS[1] dead-letter index (sorted set of job IDs)
-- KEYS[2] dead-letter record hash of the job
-- KEYS[3] job stream
-- ARGV[1] dead job's ID
-- ARGV[2] new job ID
-- ARGV[3] enqueue time, unix milliseconds
--
-- Returns the new entry's stream ID, or nil when there is no such dead letter.
local rec = redis.call('HMGET', KEYS[2], 'payload', 'key')
local payload, key = rec[1], rec[2]
if not payload then
  return false
end
local sid
if key and key ~= '' then
  sid = redis.call('XADD', KEYS[3], '*', 'id', ARGV[2], 'payload', payload,
    'enqueued_at', ARGV[3], 'key', key, 'requeued_from', ARGV[1])
else
  sid = redis.call('XADD', KEYS[3], '*', 'id', ARGV[2], 'payload', payload,
    'enqueued_at', ARGV[3], 'requeued_from', ARGV[1])
end
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[1], ARGV[1])
return sid
