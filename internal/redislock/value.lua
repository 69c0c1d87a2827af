-- value.lua: put before acquire, epoch, settoken and holder by scripts.go,
-- so the lock's value is written and read by one piece of code.
--
-- A node's lock key holds "<secret>:<token>:<worker>": the attempt's random
-- secret (base32, no ':'), the fencing token it was given (0 on a node that
-- did not mint it) and the worker ID, for people. Scripts are given the
-- prefix "<secret>:" and compare it before any change; the secret never
-- leaves Redis (holder.lua returns only what follows it).

-- ours says whether the lock value cur was written with the prefix p. p
-- must end with ':' (58), which the secret cannot contain, so no part of a
-- secret matches.
local function ours(cur, p)
  return cur and string.byte(p, -1) == 58 and string.sub(cur, 1, #p) == p
end

-- holder splits a lock value into its token and worker (0 and '' for a
-- value that is not in this format, e.g. one set by something else).
local function holder(cur)
  local token, worker = string.match(cur, '^[^:]*:(%d+):(.*)$')
  return tonumber(token) or 0, worker or ''
end

