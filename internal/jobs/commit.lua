-- commit.lua (after fence.lua): the fenced completion of the job at the head of the queue.
-- Rejected, changing nothing, when the token is older than the epoch.
-- Otherwise: advances the committed position to the entry, removes it from
-- the stream, forgets its attempt count, bumps the committed counter and
-- records it as the last committed job.
--
-- KEYS[1] epoch key
-- KEYS[2] committed position
-- KEYS[3] job stream
-- KEYS[4] attempts hash
-- KEYS[5] counters hash (field "committed")
-- KEYS[6] last-commit hash (id, stream_id, token, attempts, committed_at)
-- ARGV[1] fencing token
-- ARGV[2] stream ID of the entry
-- ARGV[3] job ID
-- ARGV[4] attempt that succeeded
-- ARGV[5] commit time, unix milliseconds
--
-- Returns {"stale", epoch}
--       | {"done"}            the position is already this entry (a resent commit)
--       | {"order", position} the entry is not the next one after the position
--       | {"ok"}
local e, reply = fenced_at(ARGV[2])
if not e then
  return reply
end

finish(ARGV[2], ARGV[3])
redis.call('HINCRBY', KEYS[5], 'committed', 1)
redis.call('HSET', KEYS[6], 'id', ARGV[3], 'stream_id', ARGV[2], 'token', ARGV[1],
  'attempts', ARGV[4], 'committed_at', ARGV[5])
return {'ok'}
