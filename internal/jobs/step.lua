-- step.lua (after fence.lua): the leader's one round trip. In one fenced,
-- atomic step it records the outcomes of the jobs it finished at the head
-- of the queue (each committed or dead-lettered, in order), gives back the
-- deliveries of claimed jobs it never started, and claims the next jobs.
-- A stale token changes nothing. The claimed jobs' entries are read by an
-- XRANGE pipelined right behind the script (the entries after a position
-- change only by these steps), so no entry passes through Lua.
--
-- KEYS[1] fence key (see fence.lua)
-- KEYS[2] committed position: stream ID of the last finished entry
-- KEYS[3] job stream (holds only entries after the position)
-- KEYS[4] attempts hash: job ID -> deliveries, for jobs delivered again
-- KEYS[5] pause flag: present while an operator has paused the queue
-- KEYS[6] counters hash (committed, dead_lettered)
-- KEYS[7] last-commit hash (id, stream_id, token, attempts, committed_at)
-- KEYS[8] dead-letter index: sorted set of job IDs scored by failure time
-- KEYS[9] last claim: "<position> <count> [token]", the first count entries
--         after position were handed out and not finished yet; the token
--         of the leader that claimed them as a batch, none once they are
--         (partly) recorded or given back
-- KEYS[10...] the dead-letter record hash of each dead-lettered outcome, in order
-- ARGV[1] fencing token
-- ARGV[2] now, unix milliseconds
-- ARGV[3] claim: how many jobs to claim at most (0: none)
-- ARGV[4] from: the position the outcomes' jobs were claimed after
-- ARGV[5] give back: 0 none; 1 (batch) keeps ARGV[6] (0 or 1) of the jobs
--         after the new position as handed out, the rest of the last claim
--         never started; 2 (single) takes back one delivery of job ID ARGV[6]
-- ARGV[6] see ARGV[5]
-- ARGV[7] the job ID among the outcomes whose deliveries the attempts hash
--         counts (it was handed out alone), or ""
-- ARGV[8] n: how many outcomes follow
-- ARGV[9...] n outcomes of 7 values each: stream ID, job ID, attempts,
--            cause ("" to commit, else the error to dead-letter with),
--            payload, enqueued_at and ordering key (for a dead letter;
--            else "")
--
-- Returns {0, fence} (stale: fence.lua)
--       | {record, position, claim, count, ...} where
--         record is 1 (none: no outcomes), 2 (ok), 3 (done: a resent step,
--           the position already is the last outcome's entry) or 4 (order:
--           the outcomes are not the entries after the position, nothing
--           recorded);
--         position is the committed position after the step ("0-0" before any);
--         claim is 0 (none), 1 (paused), 2 (empty), 3 (batch: the first
--           count entries after position are claimed, each as its first
--           delivery) or 4 (single: one job redelivered, count is its
--           attempt, and its entry {streamID, {field, value, ...}} follows).
-- The codes are step.go's record and claimResult; these locals name them.
--
-- A claim that finds its predecessor unfinished (a batch lost with its
-- leader, or a job that failed) hands out one job at a time until past it,
-- counting each delivery in the attempts hash, so a job that kills its
-- leader is isolated instead of taking its batch-mates' attempts with it.
local NONE, OK, DONE, ORDER = 1, 2, 3, 4
local CLAIM_NONE, PAUSED, EMPTY, BATCH, SINGLE = 0, 1, 2, 3, 4
local GIVE_BATCH, GIVE_SINGLE = '1', '2'

local rejected = stale()
if rejected then
  return rejected
end

local token, now, want = ARGV[1], ARGV[2], tonumber(ARGV[3])
local n = tonumber(ARGV[8])
local pos = redis.call('GET', KEYS[2]) or '0-0'
local mark = redis.call('GET', KEYS[9])
local mfrom, mcount, mtoken
if mark then
  local f, c, t = string.match(mark, '^(%S+) (%d+) ?(%S*)$')
  mfrom, mcount, mtoken = f, tonumber(c), t
end
local record = NONE

if n > 0 then
  local lastsid = ARGV[9 + (n - 1) * 7]
  if pos == lastsid then
    record = DONE
  elseif pos ~= ARGV[4] then
    record = ORDER
  else
    record = OK
    local committed, dead, last = 0, 0, nil
    for i = 1, n do
      local a = 9 + (i - 1) * 7
      local sid, id, attempts, cause = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
      if cause == '' then
        committed, last = committed + 1, a
      else
        dead = dead + 1
        local key = KEYS[9 + dead]
        redis.call('ZADD', KEYS[8], now, id)
        redis.call('DEL', key)
        redis.call('HSET', key, 'id', id, 'payload', ARGV[a + 4], 'enqueued_at', ARGV[a + 5],
          'stream_id', sid, 'token', token, 'attempts', attempts, 'failed_at', now, 'error', cause,
          'key', ARGV[a + 6])
      end
    end
    redis.call('SET', KEYS[2], lastsid)
    -- Every entry up to lastsid is finished: trim them (XLEN stays the
    -- number of pending jobs), in one pass over the stream's first node.
    local ms, seq = string.match(lastsid, '^(%d+)-(%d+)$')
    if ms and tonumber(seq) < 2 ^ 52 then
      redis.call('XTRIM', KEYS[3], 'MINID', ms .. '-' .. string.format('%d', tonumber(seq) + 1))
    else
      for i = 1, n do redis.call('XDEL', KEYS[3], ARGV[9 + (i - 1) * 7]) end
    end
    if ARGV[7] ~= '' then redis.call('HDEL', KEYS[4], ARGV[7]) end
    if committed > 0 then
      redis.call('HINCRBY', KEYS[6], 'committed', committed)
      redis.call('HSET', KEYS[7], 'id', ARGV[last + 1], 'stream_id', ARGV[last], 'token', token,
        'attempts', ARGV[last + 2], 'committed_at', now)
    end
    if dead > 0 then redis.call('HINCRBY', KEYS[6], 'dead_lettered', dead) end
    if mfrom == pos then
      mfrom, mcount, mtoken = lastsid, math.max(0, mcount - n), ''
    end
    pos = lastsid
  end
end

-- Give back what never started, only with the outcomes it came with
-- applied now (a resent step gave it back already).
if record == OK or record == NONE then
  if ARGV[5] == GIVE_BATCH and mfrom == pos then
    mcount, mtoken = tonumber(ARGV[6]), ''
  elseif ARGV[5] == GIVE_SINGLE then
    if redis.call('HINCRBY', KEYS[4], ARGV[6], -1) <= 0 then
      redis.call('HDEL', KEYS[4], ARGV[6])
    end
  end
end
-- Lost: handed out and not finished, by another leader, or by this one
-- and given back as started. This leader's own batch claim is its claim
-- sent again (its reply was lost): not a delivery yet.
local lost = mfrom == pos and mcount > 0 and mtoken ~= token
if lost and mfrom .. ' ' .. mcount .. ' ' .. mtoken ~= mark then
  redis.call('SET', KEYS[9], mfrom .. ' ' .. mcount .. ' ' .. mtoken)
end

local claim = CLAIM_NONE
if want > 0 then
  claim = BATCH
  if redis.call('EXISTS', KEYS[5]) == 1 then claim = PAUSED end
end
if claim == BATCH and lost then
  local e = redis.call('XRANGE', KEYS[3], '(' .. pos, '+', 'COUNT', 1)[1]
  if e then
    local id = e[1] -- an entry added by hand without an id is known by its stream ID
    for i = 1, #e[2], 2 do
      if e[2][i] == 'id' then id = e[2][i + 1] end
    end
    -- The lost claim was one delivery: count it with this one.
    local attempt = redis.call('HINCRBY', KEYS[4], id, 1)
    if attempt == 1 then attempt = redis.call('HINCRBY', KEYS[4], id, 1) end
    return {record, pos, SINGLE, attempt, e}
  end
  lost = false
end
if claim ~= BATCH then
  if mark and not lost then redis.call('DEL', KEYS[9]) end
  return {record, pos, claim, 0}
end
local count = math.min(want, redis.call('XLEN', KEYS[3]))
if count == 0 then
  if mark then redis.call('DEL', KEYS[9]) end
  return {record, pos, EMPTY, 0}
end
redis.call('SET', KEYS[9], pos .. ' ' .. count .. ' ' .. token)
return {record, pos, BATCH, count}
