-- claim.lua (after fence.lua): hand the leader the next job after the committed position and
-- count one more delivery of it. Fenced: a stale token changes nothing.
--
-- KEYS[1] epoch key: the lock's fencing epoch (integer string, may be absent)
-- KEYS[2] committed position: stream ID of the last finished entry
-- KEYS[3] job stream
-- KEYS[4] attempts hash: job ID -> deliveries so far
-- KEYS[5] pause flag: present while an operator has paused the queue
-- ARGV[1] fencing token
--
-- Returns {"stale", epoch}
--       | {"paused"}
--       | {"empty", position}
--       | {"job", streamID, attempt, field1, value1, field2, value2, ...}
local rejected = stale()
if rejected then
  return rejected
end
if redis.call('EXISTS', KEYS[5]) == 1 then
  return {'paused'}
end

local pos, e = head()
if not e then
  return {'empty', pos or '0-0'}
end

local sid, fields = e[1], e[2]
local id = sid -- an entry added by hand without an id is known by its stream ID
for i = 1, #fields, 2 do
  if fields[i] == 'id' then id = fields[i + 1] end
end
local attempt = redis.call('HINCRBY', KEYS[4], id, 1)
local out = {'job', sid, tostring(attempt)}
for i = 1, #fields do out[#out + 1] = fields[i] end
return out
