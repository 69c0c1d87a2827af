-- enqueue.lua: appends jobs to the tails of their groups, all or none, and
-- makes each group that was empty ready from now. Not fenced: anyone may
-- enqueue. Names are keyspace's (its doc.go holds the layout).
--
-- KEYS[1..r]     J:ready of each queue the jobs go to
-- KEYS[r+1..2r]  J:counters of those queues, in the same order
-- KEYS[2r+1...]  J:g:<member> of each job, in the jobs' order
-- ARGV[1] r: how many queues
-- ARGV[2] now, unix milliseconds: the ready score of a group that was empty
-- ARGV[3...] per job, three values: the index (1..r) of its queue, its
--            group's member, its entry
--
-- Returns the number of jobs appended. Every key's type is checked before
-- anything is written: a key of another type is an error and nothing is
-- appended (so a batch is all or none, as its one transaction promises).
local r, now = tonumber(ARGV[1]), ARGV[2]
local n = #KEYS - 2 * r
local want = {}
for i = 1, r do
  want[KEYS[i]] = 'zset'
  want[KEYS[r + i]] = 'hash'
end
for i = 1, n do want[KEYS[2 * r + i]] = 'list' end
for key, kind in pairs(want) do
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= kind then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. t .. ', not a ' .. kind)
  end
end
local added = {}
for i = 1, n do
  local a = 3 + (i - 1) * 3
  local q = tonumber(ARGV[a])
  if redis.call('RPUSH', KEYS[2 * r + i], ARGV[a + 2]) == 1 then
    redis.call('ZADD', KEYS[q], now, ARGV[a + 1])
  end
  added[q] = (added[q] or 0) + 1
end
for q, c in pairs(added) do redis.call('HINCRBY', KEYS[r + q], 'pending', c) end
return n
