-- step.lua (after fence.lua): the leader's one round trip. In one fenced,
-- atomic step it records how the runs it finished ended, enqueues the
-- schedules' ticks it was sent, moves the delayed jobs that are due into
-- their groups, releases the claims of a lost leadership (or its own, lost
-- with a reply), and claims the next runs: up to want groups that may run
-- now, oldest first, up to runMax jobs each. A stale token changes
-- nothing. Names are keyspace's (its doc.go holds the layout and what
-- each key holds).
--
-- KEYS[1] F: the fence (see fence.lua)
-- KEYS[2] J:ready
-- KEYS[3] J:inflight
-- KEYS[4] J:parked
-- KEYS[5] J:attempts
-- KEYS[6] J:stale
-- KEYS[7] J:counters
-- KEYS[8] J:last
-- KEYS[9] J:dead
-- KEYS[10] J:paused
-- KEYS[11] J:delayed
-- KEYS[12] J:schedules
-- KEYS[13] J:schedule:next
-- KEYS[14] J:schedule:last
-- ARGV[1] fencing token
-- ARGV[2] now, unix milliseconds
-- ARGV[3] the prefix of the group lists (J:g:)
-- ARGV[4] the prefix of the dead-letter records (J:dead:)
-- ARGV[5] the prefix of the idempotency keys (J:idem:)
-- ARGV[6] how long an idempotency key lives once its job finished (ms)
-- ARGV[7] want: how many groups to claim at most (0: none)
-- ARGV[8] runMax: how many jobs of a group one run claims at most
-- ARGV[9] timeMax: how many due delayed jobs to move, and due schedules
--         to name, at most (the rest: next step)
-- ARGV[10] recover: 1 to release every claim that is not this token's, or
--         is this token's and not held (below), else 0
-- ARGV[11] h: how many held members follow
-- ARGV[12...] h members: the groups whose runs this leader is executing
-- then   n: how many run outcomes follow, and n outcomes of 12 values
--        (member, first job ID, popped, end, a, b, c, uncount, last ID,
--        last attempts, d, i) followed by d dead letters of 3 values (index
--        among the popped from 0, attempts, cause) and i idempotency keys
--        of 2 values (the key, its job's ID: a popped job that carries
--        one). popped jobs at the head are finished: the dead letters among
--        them dead-lettered, the rest committed (the last one, last ID,
--        after last attempts deliveries), and their idempotency keys expire
--        ARGV[6] from now. uncount 1 with popped 0: the head's delivery,
--        counted when it was claimed, is taken back (it never ran, or its
--        store found the token stale). The end says what becomes of the
--        group:
--          d  done, cut or given back: it may run again from a (unix ms),
--             or from its new head's place when a is 0
--          r  job a (now the head) failed after b deliveries: retry from c
--          p  job a failed after b deliveries for good: park it, error c
--          i  job a was interrupted: one delivery counted, run again
--          s  job a's store said "stale token": given back uncounted; the
--             c-th leadership in a row to meet it parks the group, error b
-- then   t: how many schedules' ticks follow, and t of {name, next seen,
--        new next, c, then c ticks of 3 values (tick, unix ms; its job's
--        group member; its entry)}: applied only while the schedule's
--        next tick is still the one seen (a resent step, or a schedule
--        removed or added again meanwhile, finds it moved), each tick only
--        when later than the schedule's last; then its next tick is the
--        new next (0: it never ticks again) and its last the latest tick.
--
-- Returns {0, fence} (stale: fence.lua)
--       | {1, applied, paused, readyNow, nextDue, nextTime, ticked, k,
--         runs..., s, schedules...} where applied has one character per
--         outcome, '1' when it was recorded and '0' when the group's claim
--         was no longer this token's for that run (a resent step, or a
--         claim released meanwhile); paused is 1 when the queue is paused
--         (nothing claimed); readyNow how many groups may still run now;
--         nextDue the earliest later time (unix ms) a group may run, -1 for
--         none; nextTime the earliest due time left among the delayed
--         jobs and the schedules' next ticks (unix ms, maybe not later
--         than now: more to do), -1 for none; ticked one character per
--         schedule sent, '1' when its ticks were applied; k claimed runs
--         of {member, attempt, count, count entries}: the group's first
--         entries, the head delivered for the attempt-th time, the others
--         for the first; and s due schedules of {name, spec, next, last}
--         (last '' before the first tick), for the leader to tick.
local rejected = stale()
if rejected then
  return rejected
end

local READY, INFLIGHT, PARKED, ATTEMPTS, STALE = KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local COUNTERS, LAST, DEAD, PAUSED = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local DELAYED, SCHEDULES, SNEXT, SLAST = KEYS[11], KEYS[12], KEYS[13], KEYS[14]
local token, now, groups, deadPrefix, idemPrefix, idemTTL = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local want, runMax, timeMax = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])

local function idOf(e) return string.match(e, '^%S+ (%S+)') end

-- placeOf is an entry's place in its group's order (unix ms, as text):
-- its due time, or its enqueue time without one.
local function placeOf(e)
  local head = string.match(e, '^[^\n]*')
  return string.match(head, ' due=(%d+)') or string.match(head, '^%S+ %S+ (%d+)')
end

-- ready makes the group member ready from due, or from its head's place
-- (it keeps its place) when due is '0'; an empty group is no group.
local function ready(member, due)
  local head = redis.call('LINDEX', groups .. member, 0)
  if head then
    if due == '0' then due = placeOf(head) end
    redis.call('ZADD', READY, due, member)
  end
end

-- headHeld says whether the head x (at place p) of the ready group
-- member keeps its place: it was delivered before (it backs off, was
-- interrupted, or its store refused the token), or its group waits for a
-- time later than its place (a backoff).
local function headHeld(member, x, p)
  local id = idOf(x)
  if redis.call('HEXISTS', ATTEMPTS, id) == 1 or redis.call('HEXISTS', STALE, id) == 1 then return true end
  local score = redis.call('ZSCORE', READY, member)
  return score ~= false and tonumber(score) ~= p
end

-- joinScan bounds how far join walks back from a group's tail.
local joinScan = 100

-- join puts entry e into the group member at its place: after every job
-- placed before it (or at its place with a lower ID), as if enqueued
-- then, looking back at most joinScan jobs from the tail; never before
-- the group's run in flight, its parked head or a head already delivered
-- (backing off). A group that was empty becomes ready from e's place; a
-- ready group whose head e becomes is ready from e's place.
local function join(member, e)
  local list = groups .. member
  local t, id = tonumber(placeOf(e)), idOf(e)
  local n = redis.call('LLEN', list)
  if n == 0 then
    redis.call('RPUSH', list, e)
    redis.call('ZADD', READY, t, member)
    return
  end
  local keep = 0
  local claim = redis.call('HGET', INFLIGHT, member)
  if claim then
    keep = tonumber(string.match(claim, '^%S+ %S+ (%d+)'))
  elseif redis.call('HEXISTS', PARKED, member) == 1 then
    keep = 1
  end
  local succ
  for i = n - 1, math.max(keep, n - joinScan), -1 do
    local x = redis.call('LINDEX', list, i)
    local p, xid = tonumber(placeOf(x)), idOf(x)
    if p < t or p == t and xid < id then break end
    if i == 0 and headHeld(member, x, p) then break end
    succ = x
  end
  if not succ then
    redis.call('RPUSH', list, e)
    return
  end
  redis.call('LINSERT', list, 'BEFORE', succ, e)
  if redis.call('LINDEX', list, 0) == e then
    redis.call('ZADD', READY, t, member)
  end
end

local function park(member, id, attempts, cause)
  redis.call('HSET', PARKED, member, cjson.encode({jobId = id, attempts = tonumber(attempts),
    error = cause, parkedAt = tonumber(now), token = tonumber(token)}))
end

-- finish applies one run's outcome at ARGV[a]; it returns the index after it.
local function finish(a, applied)
  local member, first, popped, ending = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3]
  local x, y, z, uncount = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7]
  local lastID, lastAttempts, d, idems = ARGV[a + 8], ARGV[a + 9], tonumber(ARGV[a + 10]), tonumber(ARGV[a + 11])
  local after = a + 12 + 3 * d + 2 * idems
  local claim = redis.call('HGET', INFLIGHT, member)
  if not claim or claim:sub(1, #token + #first + 2) ~= token .. ' ' .. first .. ' ' then
    applied[#applied + 1] = '0'
    return after
  end
  applied[#applied + 1] = '1'
  local list = groups .. member
  if popped > 0 then
    for i = 1, d do
      local b = a + 12 + 3 * (i - 1)
      local e = redis.call('LINDEX', list, tonumber(ARGV[b]))
      local id = idOf(e)
      redis.call('ZADD', DEAD, now, id)
      redis.call('DEL', deadPrefix .. id)
      redis.call('HSET', deadPrefix .. id, 'id', id, 'entry', e, 'member', member, 'error', ARGV[b + 2],
        'attempts', ARGV[b + 1], 'failed_at', now, 'token', token)
    end
    redis.call('LTRIM', list, popped, -1)
    redis.call('HDEL', ATTEMPTS, first)
    redis.call('HDEL', STALE, first)
    redis.call('HINCRBY', COUNTERS, 'pending', -popped)
    if popped > d then
      redis.call('HINCRBY', COUNTERS, 'committed', popped - d)
      redis.call('HSET', LAST, 'id', lastID, 'token', token, 'attempts', lastAttempts, 'committed_at', now)
    end
    if d > 0 then redis.call('HINCRBY', COUNTERS, 'dead_lettered', d) end
    for i = 1, idems do
      local b = a + 12 + 3 * d + 2 * (i - 1)
      local key = idemPrefix .. ARGV[b]
      if redis.call('GET', key) == ARGV[b + 1] then redis.call('PEXPIRE', key, idemTTL) end
    end
  elseif uncount == '1' and redis.call('HINCRBY', ATTEMPTS, first, -1) <= 0 then
    redis.call('HDEL', ATTEMPTS, first)
  end
  redis.call('HDEL', INFLIGHT, member)
  if ending == 'd' then
    ready(member, x)
  elseif ending == 'r' then
    redis.call('HSET', ATTEMPTS, x, y)
    redis.call('ZADD', READY, z, member)
    redis.call('HINCRBY', COUNTERS, 'retries', 1)
  elseif ending == 'p' then
    redis.call('HSET', ATTEMPTS, x, y)
    park(member, x, y, z)
  elseif ending == 'i' then
    redis.call('HSETNX', ATTEMPTS, x, 1)
    ready(member, '0')
  elseif ending == 's' then
    local seen = redis.call('HGET', STALE, x)
    local count, last = 0, ''
    if seen then
      local c, t = string.match(seen, '^(%d+) (%S+)$')
      count, last = tonumber(c) or 0, t or ''
    end
    if last ~= token then count = count + 1 end
    redis.call('HSET', STALE, x, count .. ' ' .. token)
    if count >= tonumber(z) then
      park(member, x, redis.call('HGET', ATTEMPTS, x) or 0, y)
    else
      ready(member, '0')
    end
  end
  return after
end

-- tick applies one schedule's ticks at ARGV[a]; it returns the index
-- after them.
local function tick(a, ticked)
  local name, seen, nextTick, c = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  local after = a + 4 + 3 * c
  local cur = redis.call('ZSCORE', SNEXT, name)
  if not cur or tonumber(cur) ~= tonumber(seen) then
    ticked[#ticked + 1] = '0'
    return after
  end
  ticked[#ticked + 1] = '1'
  local last = tonumber(redis.call('HGET', SLAST, name) or '-1')
  for j = 1, c do
    local b = a + 4 + 3 * (j - 1)
    local at = tonumber(ARGV[b])
    if at > last then
      join(ARGV[b + 1], ARGV[b + 2])
      redis.call('HINCRBY', COUNTERS, 'pending', 1)
      last = at
      redis.call('HSET', SLAST, name, ARGV[b])
    end
  end
  if nextTick == '0' then
    redis.call('ZREM', SNEXT, name)
  else
    redis.call('ZADD', SNEXT, nextTick, name)
  end
  return after
end

local h = tonumber(ARGV[11])
local a = 13 + h
local applied = {}
for _ = 1, tonumber(ARGV[12 + h]) do
  a = finish(a, applied)
end
local ticked = {}
local t = tonumber(ARGV[a])
a = a + 1
for _ = 1, t do
  a = tick(a, ticked)
end

-- The delayed jobs due now join their groups, oldest first: at their due
-- time, as if enqueued then. Each is removed as it is moved: once.
local due = redis.call('ZRANGE', DELAYED, '-inf', now, 'BYSCORE', 'LIMIT', 0, timeMax)
for _, m in ipairs(due) do
  redis.call('ZREM', DELAYED, m)
  local nl = string.find(m, '\n', 1, true)
  join(string.sub(m, 1, nl - 1), string.sub(m, nl + 1))
end
if #due > 0 then redis.call('HINCRBY', COUNTERS, 'pending', #due) end

if ARGV[10] == '1' then
  local held = {}
  for i = 1, h do held[ARGV[11 + i]] = true end
  local claims = redis.call('HGETALL', INFLIGHT)
  for i = 1, #claims, 2 do
    local member = claims[i]
    local t, count, ms = string.match(claims[i + 1], '^(%S+) %S+ (%d+) (%d+)$')
    if t ~= token then
      -- Lost with its leader: each of its jobs, started or not, was
      -- delivered once more (a head claimed alone was counted already).
      for _, e in ipairs(redis.call('LRANGE', groups .. member, 0, tonumber(count) - 1)) do
        redis.call('HSETNX', ATTEMPTS, idOf(e), 1)
      end
    end
    if t ~= token or not held[member] then
      -- Its place is its head's enqueue time: it keeps its turn.
      redis.call('HDEL', INFLIGHT, member)
      redis.call('ZADD', READY, ms, member)
    end
  end
end

local runs, nruns, paused = {}, 0, 0
if want > 0 then
  if redis.call('EXISTS', PAUSED) == 1 then
    paused = 1
  else
    local counted = redis.call('HLEN', ATTEMPTS) > 0
    for _, member in ipairs(redis.call('ZRANGE', READY, '-inf', now, 'BYSCORE', 'LIMIT', 0, want)) do
      redis.call('ZREM', READY, member)
      local es = redis.call('LRANGE', groups .. member, 0, runMax - 1)
      if #es > 0 then
        local ids = {}
        for i, e in ipairs(es) do ids[i] = idOf(e) end
        local attempt = 1
        if counted then
          -- A job delivered before runs alone, its delivery counted first:
          -- a job that kills its leaders is isolated. A run ends before
          -- the next such job.
          local seen = redis.call('HMGET', ATTEMPTS, unpack(ids))
          if seen[1] then
            attempt = redis.call('HINCRBY', ATTEMPTS, ids[1], 1)
            es = {es[1]}
          else
            for i = 2, #es do
              if seen[i] then
                for j = #es, i, -1 do es[j] = nil end
                break
              end
            end
          end
        end
        redis.call('HSET', INFLIGHT, member, token .. ' ' .. ids[1] .. ' ' .. #es .. ' ' .. placeOf(es[1]))
        nruns = nruns + 1
        runs[#runs + 1] = member
        runs[#runs + 1] = attempt
        runs[#runs + 1] = #es
        for _, e in ipairs(es) do runs[#runs + 1] = e end
      end
    end
  end
end

local readyNow = redis.call('ZCOUNT', READY, '-inf', now)
local nextDue = -1
local later = redis.call('ZRANGE', READY, '(' .. now, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
if later[2] then nextDue = tonumber(later[2]) end
local nextTime = -1
for _, set in ipairs({DELAYED, SNEXT}) do
  local first = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
  if first[2] and (nextTime < 0 or tonumber(first[2]) < nextTime) then nextTime = tonumber(first[2]) end
end
local reply = {1, table.concat(applied), paused, readyNow, nextDue, nextTime, table.concat(ticked), nruns}
for _, v in ipairs(runs) do reply[#reply + 1] = v end

-- The schedules due now, for the leader to tick in its next step.
local dueNames = redis.call('ZRANGE', SNEXT, '-inf', now, 'BYSCORE', 'LIMIT', 0, timeMax, 'WITHSCORES')
local s = {}
for i = 1, #dueNames, 2 do
  local name = dueNames[i]
  local spec = redis.call('HGET', SCHEDULES, name)
  if spec then
    s[#s + 1] = name
    s[#s + 1] = spec
    s[#s + 1] = dueNames[i + 1]
    s[#s + 1] = redis.call('HGET', SLAST, name) or ''
  else
    redis.call('ZREM', SNEXT, name) -- removed: no spec, no ticks
  end
end
reply[#reply + 1] = #s / 4
for _, v in ipairs(s) do reply[#reply + 1] = v end
return reply
