-- step.lua (after fence.lua): the leader's one round trip. In one fenced,
-- atomic step it records how the runs it finished ended, releases the
-- claims of a lost leadership (or its own, lost with a reply), and claims
-- the next runs: up to want groups that may run now, oldest first, up to
-- runMax jobs each. A stale token changes nothing. Names are keyspace's
-- (its doc.go holds the layout and what each key holds).
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
-- ARGV[1] fencing token
-- ARGV[2] now, unix milliseconds
-- ARGV[3] the prefix of the group lists (J:g:)
-- ARGV[4] the prefix of the dead-letter records (J:dead:)
-- ARGV[5] want: how many groups to claim at most (0: none)
-- ARGV[6] runMax: how many jobs of a group one run claims at most
-- ARGV[7] recover: 1 to release every claim that is not this token's, or
--         is this token's and not held (below), else 0
-- ARGV[8] h: how many held members follow
-- ARGV[9...] h members: the groups whose runs this leader is executing
-- then   n: how many run outcomes follow, and n outcomes of 11 values
--        (member, first job ID, popped, end, a, b, c, uncount, last ID,
--        last attempts, d) followed by d dead letters of 3 values (index
--        among the popped from 0, attempts, cause). popped jobs at the head
--        are finished: the dead letters among them dead-lettered, the rest
--        committed (the last one, last ID, after last attempts
--        deliveries). uncount 1 with popped 0: the head's delivery, counted
--        when it was claimed, is taken back (it never ran, or its store
--        found the token stale). The end says what becomes of the group:
--          d  done, cut or given back: it may run again from a (unix ms),
--             or from its new head's enqueue time when a is 0
--          r  job a (now the head) failed after b deliveries: retry from c
--          p  job a failed after b deliveries for good: park it, error c
--          i  job a was interrupted: one delivery counted, run again
--          s  job a's store said "stale token": given back uncounted; the
--             c-th leadership in a row to meet it parks the group, error b
--
-- Returns {0, fence} (stale: fence.lua)
--       | {1, applied, paused, readyNow, nextDue, k, runs...} where applied
--         has one character per outcome, '1' when it was recorded and '0'
--         when the group's claim was no longer this token's for that run (a
--         resent step, or a claim released meanwhile); paused is 1 when the
--         queue is paused (nothing claimed); readyNow how many groups may
--         still run now; nextDue the earliest later time (unix ms) a group
--         may run, -1 for none; and k claimed runs of {member, attempt,
--         count, count entries}: the group's first entries, the head
--         delivered for the attempt-th time, the others for the first.
local rejected = stale()
if rejected then
  return rejected
end

local READY, INFLIGHT, PARKED, ATTEMPTS, STALE = KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local COUNTERS, LAST, DEAD, PAUSED = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local token, now, groups, deadPrefix = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local want, runMax = tonumber(ARGV[5]), tonumber(ARGV[6])

local function idOf(e) return string.match(e, '^%S+ (%S+)') end
local function msOf(e) return string.match(e, '^%S+ %S+ (%d+)') end

-- ready makes the group member ready from due, or from its head's enqueue
-- time (it keeps its place) when due is '0'; an empty group is no group.
local function ready(member, due)
  local head = redis.call('LINDEX', groups .. member, 0)
  if head then
    if due == '0' then due = msOf(head) end
    redis.call('ZADD', READY, due, member)
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
  local lastID, lastAttempts, d = ARGV[a + 8], ARGV[a + 9], tonumber(ARGV[a + 10])
  local after = a + 11 + 3 * d
  local claim = redis.call('HGET', INFLIGHT, member)
  if not claim or claim:sub(1, #token + #first + 2) ~= token .. ' ' .. first .. ' ' then
    applied[#applied + 1] = '0'
    return after
  end
  applied[#applied + 1] = '1'
  local list = groups .. member
  if popped > 0 then
    for i = 1, d do
      local b = a + 11 + 3 * (i - 1)
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

local h = tonumber(ARGV[8])
local a = 10 + h
local applied = {}
for _ = 1, tonumber(ARGV[9 + h]) do
  a = finish(a, applied)
end

if ARGV[7] == '1' then
  local held = {}
  for i = 1, h do held[ARGV[8 + i]] = true end
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
        redis.call('HSET', INFLIGHT, member, token .. ' ' .. ids[1] .. ' ' .. #es .. ' ' .. msOf(es[1]))
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
local reply = {1, table.concat(applied), paused, readyNow, nextDue, nruns}
for _, v in ipairs(runs) do reply[#reply + 1] = v end
return reply
