-- stats.lua: a queue's figures, read at one instant. Read-only. Names are
-- keyspace's (its doc.go holds the layout).
--
-- KEYS[1] J:counters
-- KEYS[2] J:dead
-- KEYS[3] L:epoch
-- KEYS[4] J:paused
-- KEYS[5] J:ready
-- KEYS[6] J:inflight
-- KEYS[7] J:parked
-- KEYS[8] J:delayed
--
-- Returns {pending, committed, retries, dead letters, epoch, paused,
-- in flight, parked, oldest, oldest parked, now, delayed}: the counters (0 when
-- absent), ZCARD J:dead, the epoch (0 when absent), 1 when paused, the
-- groups in flight and parked, the enqueue time (unix ms) of the oldest
-- head among the groups ready now or in flight and the time the oldest
-- group was parked (0 for none), the server's clock, and ZCARD J:delayed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local c = redis.call('HMGET', KEYS[1], 'pending', 'committed', 'retries')
local oldest, oldestParked = 0, 0
local first = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
if first[2] and tonumber(first[2]) <= now then
  oldest = tonumber(first[2])
end
for _, v in ipairs(redis.call('HVALS', KEYS[6])) do
  local ms = tonumber(string.match(v, ' (%d+)$'))
  if ms and (oldest == 0 or ms < oldest) then oldest = ms end
end
for _, v in ipairs(redis.call('HVALS', KEYS[7])) do
  local ok, p = pcall(cjson.decode, v)
  local at = ok and tonumber(p.parkedAt)
  if at and (oldestParked == 0 or at < oldestParked) then oldestParked = at end
end
return {tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0, redis.call('ZCARD', KEYS[2]),
  tonumber(redis.call('GET', KEYS[3]) or '0') or 0, redis.call('EXISTS', KEYS[4]),
  redis.call('HLEN', KEYS[6]), redis.call('HLEN', KEYS[7]), oldest, oldestParked, now, redis.call('ZCARD', KEYS[8])}
