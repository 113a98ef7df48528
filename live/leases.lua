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
-- renew    one key; ARGV[3..] tokens of the caller: each lease ends one lease from now, the
--          token added again when Redis lost it (a restart without persistence, a failover).
--          Returns the number held.
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

-- renew: ZADD in steps of 200 tokens, within the arguments Lua's unpack takes.
local key, args = KEYS[1], {}
for i = 3, #ARGV do
  args[#args + 1] = now + lease
  args[#args + 1] = ARGV[i]
  if #args == 400 or i == #ARGV then
    redis.call('ZADD', key, unpack(args))
    args = {}
  end
end
redis.call('PEXPIRE', key, lease)
return redis.call('ZCARD', key)
