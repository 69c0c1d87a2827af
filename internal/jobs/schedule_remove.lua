-- schedule_remove.lua: deletes a schedule, all of it at once, so a step
-- that read it finds its next tick gone. Not fenced: an operator's
-- change. Names are keyspace's (its doc.go holds the layout).
--
-- KEYS[1] J:schedules
-- KEYS[2] J:schedule:next
-- KEYS[3] J:schedule:last
-- ARGV[1] the schedule's name
--
-- Returns 1 when it was deleted, 0 when there was none.
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return redis.call('HDEL', KEYS[1], ARGV[1])
