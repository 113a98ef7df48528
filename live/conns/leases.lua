-- The slots that one API key holds on every instance sharing this Redis: a sorted set of
-- holder tokens per kind of slot (connections, subscriptions), each scored by the Unix
-- millisecond at which its lease ends, on Redis TIME, the one clock of every instance. A lease
-- not renewed ends by itself: the slots of an instance that died are free one lease after its
-- last renewal.
--
-- KEYS     sets of one API key, under one hash tag: {<prefix>live:k:<id>}:conns and
--          {<prefix>live:k:<id>}:subs
-- ARGV[1]  'take' or 'renew'
-- ARGV[2]  the lease, in milliseconds
-- take     ARGV[3] the cap, ARGV[4..] a new holder's token for each of KEYS, in order: drops
--          the ended leases of each set and, when every one holds fewer than the cap, adds
--          each its token. Returns {1, 0} when they were added, {0, i} when KEYS[i] is full.
-- renew    one key; ARGV[3] the cap, ARGV[4..] tokens of the caller: each lease still held ends
--          one lease from now; a token Redis lost (a restart without persistence, a failover)
--          is added again only while the set holds fewer than the cap, so that a renewal never
--          takes a key past it (other instances may have taken the free slots meanwhile).
--          Returns the tokens it could not add again, whose holders the caller cuts off.
--
-- Every write leaves its set expiring one lease from now, when every lease in it has ended.

-- Writes after TIME need effects replication: the default since Redis 5, a call before that.
if redis.replicate_commands then redis.replicate_commands() end

local lease = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
end

if ARGV[1] == 'take' then
  local cap = tonumber(ARGV[3])
  for i = 1, #KEYS do
    if redis.call('ZCARD', KEYS[i]) >= cap then
      return {0, i}
    end
  end
  for i = 1, #KEYS do
    redis.call('ZADD', KEYS[i], now + lease, ARGV[3 + i])
    redis.call('PEXPIRE', KEYS[i], lease)
  end
  return {1, 0}
end

-- renew: those held first, ZADD XX in steps of 200 tokens (within the arguments Lua's unpack
-- takes), then those lost while there is room.
local key, cap, args, missing, lost = KEYS[1], tonumber(ARGV[3]), {}, {}, {}
for i = 4, #ARGV do
  if redis.call('ZSCORE', key, ARGV[i]) then
    args[#args + 1] = now + lease
    args[#args + 1] = ARGV[i]
  else
    missing[#missing + 1] = ARGV[i]
  end
  if #args == 400 or (i == #ARGV and #args > 0) then
    redis.call('ZADD', key, 'XX', unpack(args))
    args = {}
  end
end
local n = redis.call('ZCARD', key)
for _, tok in ipairs(missing) do
  if n < cap then
    redis.call('ZADD', key, now + lease, tok)
    n = n + 1
  else
    lost[#lost + 1] = tok
  end
end
if n > 0 then
  redis.call('PEXPIRE', key, lease)
end
return lost
