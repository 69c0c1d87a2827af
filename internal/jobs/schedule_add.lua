-- schedule_add.lua: stores a schedule unless its name is taken: its spec
-- and its first tick together, or nothing. Not fenced: an operator's
-- change, like an enqueue. Names are keyspace's (its doc.go holds the
-- layout).
--
-- KEYS[1] J:schedules
-- KEYS[2] J:schedule:next
-- ARGV[1] the schedule's name
-- ARGV[2] its spec (JSON)
-- ARGV[3] its first tick, unix milliseconds
--
-- Returns 1 when it was stored, 0 when the name is taken.
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
