-- One rate-limit decision for one subject, atomically, in one round trip. It mirrors
-- state.take in decide.go line by line; keep the two in step (TestStoresAgree checks it).
--
-- KEYS[1]  the subject's hash: {<prefix>k:<id>} or {<prefix>a:<address>}
-- ARGV     per_minute, per_day, suspend_after, suspend_window_ms, suspend_base_ms,
--          suspend_max_ms, suspend_memory_ms, now_ms (0: use Redis TIME, the shared clock)
-- returns  {outcome (1 allowed, 2 limited, 3 suspended), now_ms, minute_count, day_count,
--          retry_at_ms (0 when allowed)}
--
-- Times are integer milliseconds: about 1.8e12 today, exact in Lua's doubles, and written by
-- redis.call with 17 significant digits, so they round-trip unchanged.

-- Writes after TIME need effects replication: the default since Redis 5, a call before that.
if redis.replicate_commands then redis.replicate_commands() end

local key = KEYS[1]
local perMinute, perDay = tonumber(ARGV[1]), tonumber(ARGV[2])
local after, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local base, ceiling, memory = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local now = tonumber(ARGV[8])
if now <= 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local MINUTE, DAY, MAXLEVEL = 60000, 86400000, 32
local ALLOWED, LIMITED, SUSPENDED = 1, 2, 3

local f = redis.call('HMGET', key, 'mw', 'mc', 'dw', 'dc', 'rs', 'rc', 'su', 'sl')
local mw, mc = tonumber(f[1]) or 0, tonumber(f[2]) or 0
local dw, dc = tonumber(f[3]) or 0, tonumber(f[4]) or 0
local rs, rc = tonumber(f[5]) or 0, tonumber(f[6]) or 0
local su, sl = tonumber(f[7]) or 0, tonumber(f[8]) or 0

local mi, di = math.floor(now / MINUTE), math.floor(now / DAY)
if mw ~= mi then mc = 0 end
if dw ~= di then dc = 0 end

-- blockedUntil: when every exhausted window has reset (0 when none is exhausted).
local blocked = 0
if mc >= perMinute then blocked = (mi + 1) * MINUTE end
if dc >= perDay then blocked = math.max(blocked, (di + 1) * DAY) end

local function save(...)
  redis.call('HSET', key, ...)
  redis.call('PEXPIREAT', key, math.max((dw + 1) * DAY, rs + window, su + memory))
end

if su > now then
  return {SUSPENDED, now, mc, dc, math.max(su, blocked)}
end

if mc < perMinute and dc < perDay then
  mw, mc, dw, dc = mi, mc + 1, di, dc + 1
  save('mw', mw, 'mc', mc, 'dw', dw, 'dc', dc)
  return {ALLOWED, now, mc, dc, 0}
end

if after <= 0 then
  return {LIMITED, now, mc, dc, blocked}
end
if rc == 0 or now >= rs + window then
  rs, rc = now, 0
end
rc = rc + 1
if rc < after then
  save('rs', rs, 'rc', rc)
  return {LIMITED, now, mc, dc, blocked}
end

-- suspend: one level above the previous suspension when that ended within the memory.
local level = 0
if su > 0 and now < su + memory then level = math.min(sl + 1, MAXLEVEL) end
local d, i = base, 0
while i < level and d < ceiling do
  d, i = d * 2, i + 1
end
su, sl, rs, rc = now + math.min(d, ceiling), level, 0, 0
save('rs', rs, 'rc', rc, 'su', su, 'sl', sl)
return {SUSPENDED, now, mc, dc, math.max(su, blocked)}
