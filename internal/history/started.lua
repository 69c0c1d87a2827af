-- started.lua: append a leadership to the history, with how the previous one ended.
--
-- KEYS[1] history stream K:history
-- KEYS[2] last-end hash K:history:ended {token, worker, reason, at}
-- ARGV[1] fencing token of the new leadership
-- ARGV[2] worker ID
-- ARGV[3] approximate maximum length of the stream
--
-- Returns {1, id} when the newest entry already has this token (a re-sent
-- call: a duplicate), else {0, id, started_ms, previous_ended,
-- previous_ended_at_ms}.
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local prevToken, prevWorker = '', ''
if #newest > 0 then
  local f = newest[1][2]
  for i = 1, #f, 2 do
    if f[i] == 'token' then prevToken = f[i + 1] end
    if f[i] == 'worker' then prevWorker = f[i + 1] end
  end
  if prevToken == ARGV[1] then
    return {1, newest[1][1]}
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reason, endedAt = '', ''
if prevToken ~= '' then
  local e = redis.call('HMGET', KEYS[2], 'token', 'reason', 'at')
  if e[1] == prevToken then
    reason, endedAt = e[2] or '', e[3] or ''
  else
    reason = 'lease_expired'
  end
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*',
  'token', ARGV[1], 'worker', ARGV[2], 'started', now,
  'previous_token', prevToken, 'previous_worker', prevWorker,
  'previous_ended', reason, 'previous_ended_at', endedAt)
return {0, id, tostring(now), reason, endedAt}
