-- retry.lua: an operator's retry of a parked group: its failing job runs
-- again now, with fresh attempts, and its held jobs follow in order. Not
-- fenced: the group is not claimed by anyone while it is parked. Names
-- are keyspace's (its doc.go holds the layout).
--
-- KEYS[1] J:parked
-- KEYS[2] J:ready
-- KEYS[3] J:attempts
-- KEYS[4] J:stale
-- ARGV[1] the group's member
-- ARGV[2] the failing job's ID the caller saw, or "" for whichever it is
-- ARGV[3] now, unix milliseconds
-- ARGV[4] the prefix of the group lists (J:g:)
--
-- Returns the failing job's ID, or false when the group is not parked
-- (or is parked on another job than ARGV[2]).
local rec = redis.call('HGET', KEYS[1], ARGV[1])
if not rec then
  return false
end
local id = cjson.decode(rec).jobId
if ARGV[2] ~= '' and id ~= ARGV[2] then
  return false
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
if redis.call('EXISTS', ARGV[4] .. ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
end
return id
