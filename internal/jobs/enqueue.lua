-- enqueue.lua: appends jobs to the tails of their groups, all or none, and
-- makes each group that was empty ready from now; keeps a delayed job
-- apart until it is due; enqueues nothing for a job whose idempotency key
-- a job already holds. Not fenced: anyone may enqueue. Names are
-- keyspace's (its doc.go holds the layout).
--
-- KEYS[1..r]     J:ready of each queue the jobs go to
-- KEYS[r+1..2r]  J:counters of those queues, in the same order
-- KEYS[2r+1..3r] J:delayed of those queues, in the same order
-- KEYS[3r+1...]  J:g:<member> of each job, in the jobs' order
-- ARGV[1] r: how many queues
-- ARGV[2] now, unix milliseconds: the ready score of a group that was empty
-- ARGV[3..2+r] the prefix of each queue's idempotency keys (J:idem:)
-- ARGV[3+r...] per job, five values: the index (1..r) of its queue, its
--            group's member, its entry, its due time (unix ms; 0: it joins
--            its group now), its idempotency key ("" for none)
--
-- Returns, per job, "" when it was added (to its group or to J:delayed),
-- or the ID of the job that holds its idempotency key (then nothing was
-- added for it; a later job of the batch with the same key is this one's
-- duplicate). Every key's type is checked before anything is written: a
-- key of another type is an error and nothing is appended (so a batch is
-- all or none, as its one transaction promises).
local r, now = tonumber(ARGV[1]), ARGV[2]
local n = #KEYS - 3 * r
local at = 3 + r -- the first job's values
local want = {}
for i = 1, r do
  want[KEYS[i]] = 'zset'
  want[KEYS[r + i]] = 'hash'
  want[KEYS[2 * r + i]] = 'zset'
end
for i = 1, n do
  want[KEYS[3 * r + i]] = 'list'
  local a = at + (i - 1) * 5
  if ARGV[a + 4] ~= '' then want[ARGV[2 + tonumber(ARGV[a])] .. ARGV[a + 4]] = 'string' end
end
for key, kind in pairs(want) do
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= kind then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. t .. ', not a ' .. kind)
  end
end
local added, out = {}, {}
for i = 1, n do
  local a = at + (i - 1) * 5
  local q, member, entry, due, idem = tonumber(ARGV[a]), ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local held = false
  if idem ~= '' then
    local key = ARGV[2 + q] .. idem
    held = redis.call('GET', key)
    if not held then redis.call('SET', key, string.match(entry, '^%S+ (%S+)')) end
  end
  if held then
    out[i] = held
  elseif due ~= '0' then
    -- Kept apart; its member first, so a step knows its group, and ties
    -- of one group sort by entry, that is by ID: in enqueue order.
    redis.call('ZADD', KEYS[2 * r + q], due, member .. '\n' .. entry)
    out[i] = ''
  else
    if redis.call('RPUSH', KEYS[3 * r + i], entry) == 1 then
      redis.call('ZADD', KEYS[q], now, member)
    end
    added[q] = (added[q] or 0) + 1
    out[i] = ''
  end
end
for q, c in pairs(added) do redis.call('HINCRBY', KEYS[r + q], 'pending', c) end
return out
