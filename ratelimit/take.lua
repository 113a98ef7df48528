-- n rate-limit decisions for one subject, one after the other, atomically, in one round trip,
-- at one clock reading: exactly the decisions, and the state left, of n calls deciding one each
-- at the same now. The loop body mirrors state.take in decide.go line by line (with
-- blockedUntil computed once up front, state.suspend and backoff written out, and a break for
-- each of its returns), and the write after it what MemoryStore keeps after a change; keep them
-- in step (TestStoresAgree and TestScriptBatchesAgree check it).
--
-- KEYS[1]  the subject's hash: {<prefix>k:<id>} or {<prefix>a:<address>}
-- ARGV     per_minute, per_day, suspend_after, suspend_window_ms, suspend_base_ms,
--          suspend_max_ms, suspend_memory_ms, now_ms (0: use Redis TIME, the shared clock),
--          n (the number of decisions, at least 1; 1 when absent), check (1: Store.Check, an
--          admitted request is not charged; 0 or absent: Store.Take), cost (the units each
--          decision takes from both windows when admitted, at least 1; 1 when absent)
-- returns  5*n integers, 5 per decision in turn: outcome (1 allowed, 2 limited, 3 suspended),
--          now_ms, minute_count, day_count, retry_at_ms (0 when allowed)
--
-- The hash is read once (HMGET), decided on in local variables and written once: one HSET of
-- the fields that changed and one PEXPIREAT, only when a decision changed something. No local
-- functions: their closures, made on every run, cost about 2 us of server CPU per call.
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
local n = tonumber(ARGV[9]) or 1
local check = tonumber(ARGV[10]) == 1
local cost = math.max(tonumber(ARGV[11]) or 1, 1)
if now <= 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local MINUTE, DAY, MAXLEVEL = 60000, 86400000, 32
local ALLOWED, LIMITED, SUSPENDED = 1, 2, 3

-- The stored state (st in state.take), and which of its fields changed.
local f = redis.call('HMGET', key, 'mw', 'mc', 'dw', 'dc', 'rs', 'rc', 'su', 'sl')
local mw, mc = tonumber(f[1]) or 0, tonumber(f[2]) or 0
local dw, dc = tonumber(f[3]) or 0, tonumber(f[4]) or 0
local rs, rc = tonumber(f[5]) or 0, tonumber(f[6]) or 0
local su, sl = tonumber(f[7]) or 0, tonumber(f[8]) or 0
local counts, rejections, suspension = false, false, false -- mw/mc/dw/dc, rs/rc, su/sl

local out = {0, 0, 0, 0, 0} -- sized for one decision
for i = 1, 5 * n, 5 do
  -- state.take. cmc and cdc are the counts of the current windows (mc and dc there).
  local mi, di = math.floor(now / MINUTE), math.floor(now / DAY)
  local cmc, cdc = mc, dc
  if mw ~= mi then cmc = 0 end
  if dw ~= di then cdc = 0 end
  -- blockedUntil: when every window without room for cost has reset (0 when all have room).
  local blocked = 0
  if cmc + cost > perMinute then blocked = (mi + 1) * MINUTE end
  if cdc + cost > perDay then blocked = math.max(blocked, (di + 1) * DAY) end
  local room = cmc + cost <= perMinute and cdc + cost <= perDay
  local outcome, retryAt
  repeat -- until true: each break is a return of state.take
    if su > now then
      outcome, retryAt = SUSPENDED, math.max(su, blocked)
      break
    end
    if room and check then
      outcome, retryAt = ALLOWED, 0
      break
    end
    if room then
      mw, mc, dw, dc, counts = mi, cmc + cost, di, cdc + cost, true
      outcome, cmc, cdc, retryAt = ALLOWED, cmc + cost, cdc + cost, 0
      break
    end
    outcome, retryAt = LIMITED, blocked
    if after <= 0 then
      break
    end
    if rc == 0 or now >= rs + window then
      rs, rc = now, 0
    end
    rc, rejections = rc + 1, true
    if rc < after then
      break
    end
    -- state.suspend: one level above the previous suspension when that ended within the
    -- memory; backoff: base doubled level times, at most the ceiling.
    local level = 0
    if su > 0 and now < su + memory then level = math.min(sl + 1, MAXLEVEL) end
    local d, k = base, 0
    while k < level and d < ceiling do
      d, k = d * 2, k + 1
    end
    su, sl, rs, rc, suspension = now + math.min(d, ceiling), level, 0, 0, true
    outcome, retryAt = SUSPENDED, math.max(su, blocked)
  until true
  out[i], out[i + 1], out[i + 2], out[i + 3], out[i + 4] = outcome, now, cmc, cdc, retryAt
end

-- The fields that changed and, as MemoryStore keeps after a change, the expiry (state.expiry):
-- the end of the day window, of the rejection window or of the suspension memory, whichever
-- is last.
local fields = counts and {'mw', mw, 'mc', mc, 'dw', dw, 'dc', dc} or {}
if rejections then
  local k = #fields
  fields[k + 1], fields[k + 2], fields[k + 3], fields[k + 4] = 'rs', rs, 'rc', rc
end
if suspension then
  local k = #fields
  fields[k + 1], fields[k + 2], fields[k + 3], fields[k + 4] = 'su', su, 'sl', sl
end
if #fields > 0 then
  redis.call('HSET', key, unpack(fields))
  redis.call('PEXPIREAT', key, math.max((dw + 1) * DAY, rs + window, su + memory))
end
return out
