-- started.lua: append a leadership of one lease (the lock, or one
-- partition) to the fleet's history, with how the lease's previous
-- leadership ended.
--
-- KEYS[1] history stream K:history
-- KEYS[2] the lease's hash beside it (keyspace.Lease.HistoryEnded):
--         started_token, started_worker, started_id of its last leadership,
--         and token, worker, reason, at of the last one that ended on purpose
-- ARGV[1] fencing token of the new leadership
-- ARGV[2] worker ID
-- ARGV[3] approximate maximum length of the stream
-- ARGV[4] the partition, or "" for a fleet without partitions
--
-- Returns {1, id} when the lease's last leadership already has this token
-- (a re-sent call: a duplicate), else {0, id, started_ms, previous_ended,
-- previous_ended_at_ms}.
local h = redis.call('HMGET', KEYS[2], 'started_token', 'started_worker', 'started_id', 'token', 'reason', 'at')
local prevToken, prevWorker = h[1] or '', h[2] or ''
if prevToken == ARGV[1] then
  return {1, h[3] or ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reason, endedAt = '', ''
if prevToken ~= '' then
  if h[4] == prevToken then
    reason, endedAt = h[5] or '', h[6] or ''
  else
    reason = 'lease_expired'
  end
end
local fields = {'token', ARGV[1], 'worker', ARGV[2], 'started', now,
  'previous_token', prevToken, 'previous_worker', prevWorker,
  'previous_ended', reason, 'previous_ended_at', endedAt}
if ARGV[4] ~= '' then
  table.insert(fields, 'partition')
  table.insert(fields, ARGV[4])
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', unpack(fields))
redis.call('HSET', KEYS[2], 'started_token', ARGV[1], 'started_worker', ARGV[2], 'started_id', id)
return {0, id, tostring(now), reason, endedAt}
