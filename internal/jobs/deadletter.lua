-- deadletter.lua (after fence.lua): the fenced move of the job at the head of the queue to
-- the dead letters. Rejected, changing nothing, when the token is older than
-- the epoch. Otherwise: advances the committed position past the entry,
-- removes it from the stream, forgets its attempt count, bumps the
-- dead-letter counter and stores the job with its error.
--
-- KEYS[1] epoch key
-- KEYS[2] committed position
-- KEYS[3] job stream
-- KEYS[4] attempts hash
-- KEYS[5] counters hash (field "dead_lettered")
-- KEYS[6] dead-letter index: sorted set of job IDs scored by failure time
-- KEYS[7] dead-letter record hash of this job
-- ARGV[1] fencing token
-- ARGV[2] stream ID of the entry
-- ARGV[3] job ID
-- ARGV[4] attempts made
-- ARGV[5] failure time, unix milliseconds
-- ARGV[6] error text
--
-- Returns {"stale", epoch} | {"done"} | {"order", position} | {"ok"},
-- as commit.lua.
local e, reply = fenced_at(ARGV[2])
if not e then
  return reply
end

local fields = e[2]
local record = {'id', ARGV[3], 'payload', '', 'enqueued_at', '0'}
for i = 1, #fields, 2 do
  if fields[i] == 'payload' then record[4] = fields[i + 1] end
  if fields[i] == 'enqueued_at' then record[6] = fields[i + 1] end
end
finish(ARGV[2], ARGV[3])
redis.call('HINCRBY', KEYS[5], 'dead_lettered', 1)
redis.call('ZADD', KEYS[6], ARGV[5], ARGV[3])
redis.call('DEL', KEYS[7])
redis.call('HSET', KEYS[7], record[1], record[2], record[3], record[4], record[5], record[6],
  'stream_id', ARGV[2], 'token', ARGV[1], 'attempts', ARGV[4], 'failed_at', ARGV[5], 'error', ARGV[6])
return {'ok'}
