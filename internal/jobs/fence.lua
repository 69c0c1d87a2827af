-- fence.lua: the fencing check, put before step.lua by scripts.go so the
-- rule lives in one place. It takes:
--
-- KEYS[1] fence key: the highest token a fenced write carried, or the epoch
--         an operator raised (integer string, may be absent; the lock's
--         FenceKey: its epoch with one lock node, K:epoch:fence in Redlock)
-- ARGV[1] fencing token

-- stale returns nil when the token is not below the fence (Kleppmann's
-- rule: the highest token seen, not the highest issued, so a token minted
-- for an attempt that then failed fences no one), after raising the fence
-- to the token; else the reply that rejects the call: {0, fence} (0: the
-- reply code "stale", recordStale in step.go), or an error when the fence
-- key or the token is not an integer.
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
    return {0, raw}
  end
  if token > fence then
    redis.call('SET', KEYS[1], ARGV[1])
  end
  return nil
end
