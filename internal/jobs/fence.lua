-- fence.lua: put before each fenced script (claim, commit, deadletter) by
-- scripts.go, so the fencing check and the reading of the queue head exist
-- once. Each of those scripts takes:
--
-- KEYS[1] fence key: the highest token a fenced write carried, or the epoch
--         an operator raised (integer string, may be absent; the lock's
--         K:epoch:fence, redislock.FenceKey)
-- KEYS[2] committed position: stream ID of the last finished entry
-- KEYS[3] job stream
-- KEYS[4] attempts hash: job ID -> deliveries so far
-- ARGV[1] fencing token

-- stale returns nil when the token is not below the fence (Kleppmann's
-- rule: the highest token seen, not the highest issued, so a token minted
-- for an attempt that then failed fences no one), after raising the fence
-- to the token; else the reply that rejects the call: {"stale", fence}, or
-- an error when the fence key or the token is not an integer.
local function stale()
  local raw = redis.call('GET', KEYS[1])
  local fence = 0
  if raw then
    fence = tonumber(raw)
    if not fence then
      return redis.error_reply('jobs: fence key ' .. KEYS[1] .. ' is not an integer')
    end
  end
  local token = tonumber(ARGV[1])
  if not token then
    return redis.error_reply('jobs: fencing token ' .. ARGV[1] .. ' is not an integer')
  end
  if token < fence then
    return {'stale', raw}
  end
  if token > fence then
    redis.call('SET', KEYS[1], ARGV[1])
  end
  return nil
end

-- head returns the committed position (nil before any) and the first entry
-- after it ({streamID, fields}, nil when there is none).
local function head()
  local pos = redis.call('GET', KEYS[2])
  local start = '-'
  if pos then start = '(' .. pos end
  local e = redis.call('XRANGE', KEYS[3], start, '+', 'COUNT', 1)
  return pos, e[1]
end

-- at returns the head entry when it is the entry sid, else the reply that
-- ends the call: {"done"} when the position already is sid (a resent
-- call), {"order", position} when sid is not the next entry.
local function at(sid)
  local pos, e = head()
  if pos == sid then
    return nil, {'done'}
  end
  if not e or e[1] ~= sid then
    return nil, {'order', pos or '0-0'}
  end
  return e, nil
end

-- fenced_at is the start of a fenced write of entry sid: the entry when the
-- token is current and sid is the head, else the reply that ends the call
-- (stale, done or order, as stale and at say).
local function fenced_at(sid)
  local rejected = stale()
  if rejected then
    return nil, rejected
  end
  return at(sid)
end

-- finish moves the committed position to entry sid, removes it from the
-- stream (so XLEN counts pending jobs) and forgets job id's deliveries.
local function finish(sid, id)
  redis.call('SET', KEYS[2], sid)
  redis.call('XDEL', KEYS[3], sid)
  redis.call('HDEL', KEYS[4], id)
end
