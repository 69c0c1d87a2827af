-- ended.lua: record how a leadership ended, just before its lock is released.
--
-- KEYS[1] the lease's hash beside the history (keyspace.Lease.HistoryEnded)
-- ARGV[1] fencing token of the leadership that ends
-- ARGV[2] worker ID
-- ARGV[3] reason: released, stepped_down or fenced
--
-- Returns the server's time in unix ms.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'worker', ARGV[2], 'reason', ARGV[3], 'at', now)
return now
