package ratelimit

import "time"

// The decision works on integer milliseconds since the Unix epoch, the unit both stores share
// (take.lua mirrors this file line by line; keep them in step).
const (
	minuteMS = int64(time.Minute / time.Millisecond)
	dayMS    = int64(24 * time.Hour / time.Millisecond)
	maxLevel = 32 // suspension levels beyond this cannot double any further
)

// state is one subject's stored state; the field names match the Redis hash fields.
type state struct {
	mw, mc int64 // minute window number (now/minuteMS) and its count
	dw, dc int64 // day window number and its count
	rs, rc int64 // start of the rejection window and the rate_limited rejections in it
	su, sl int64 // end and level of the latest suspension (su zero: never suspended)
}

// rules is a Policy in milliseconds, what a request costs, and whether an admitted request is
// charged.
type rules struct {
	perMinute, perDay            int64
	after, window, base, ceiling int64
	memory                       int64
	cost                         int64 // units a request takes from each window, at least 1
	check                        bool  // Counters.Check: an admitted request is not charged
}

// rulesOf returns the rules of a Take of n units under p.
func rulesOf(p Policy, n int64) rules {
	s := p.Suspension
	return rules{
		perMinute: p.PerMinute, perDay: p.PerDay,
		after: s.After, window: s.Window.Milliseconds(), base: s.Base.Milliseconds(),
		ceiling: s.Max.Milliseconds(), memory: s.Memory.Milliseconds(), cost: max(n, 1),
	}
}

// checkRulesOf returns the rules of Counters.Check under p: room for one unit.
func checkRulesOf(p Policy) rules {
	r := rulesOf(p, 1)
	r.check = true
	return r
}

// raw is a decision as both stores compute it: the outcome, the clock, the window counts and,
// when rejected, the moment a retry is admitted.
type raw struct {
	outcome              Outcome
	now, mc, dc, retryAt int64
}

// take decides one request of r.cost units at now, updating st. It reports whether st
// changed. The request is admitted only when every window has room for all its units, and
// then charged them all. Under check rules an admitted request is not charged; a rejection is
// counted all the same.
func (st *state) take(now int64, r rules) (raw, bool) {
	mi, di := now/minuteMS, now/dayMS
	mc, dc := current(st.mw, mi, st.mc), current(st.dw, di, st.dc)
	if st.su > now {
		return raw{Suspended, now, mc, dc, max(st.su, blockedUntil(mi, di, mc, dc, r))}, false
	}
	room := mc+r.cost <= r.perMinute && dc+r.cost <= r.perDay
	if room && r.check {
		return raw{Allowed, now, mc, dc, 0}, false
	}
	if room {
		st.mw, st.mc, st.dw, st.dc = mi, mc+r.cost, di, dc+r.cost
		return raw{Allowed, now, mc + r.cost, dc + r.cost, 0}, true
	}
	retryAt := blockedUntil(mi, di, mc, dc, r)
	if r.after <= 0 {
		return raw{Limited, now, mc, dc, retryAt}, false
	}
	if st.rc == 0 || now >= st.rs+r.window {
		st.rs, st.rc = now, 0
	}
	st.rc++
	if st.rc < r.after {
		return raw{Limited, now, mc, dc, retryAt}, true
	}
	st.suspend(now, r)
	return raw{Suspended, now, mc, dc, max(st.su, retryAt)}, true
}

// current returns count when the stored window is the current one, else zero.
func current(stored, now, count int64) int64 {
	if stored != now {
		return 0
	}
	return count
}

// blockedUntil returns when every window without room for r.cost units has reset (zero when
// every one has room).
func blockedUntil(mi, di, mc, dc int64, r rules) int64 {
	var t int64
	if mc+r.cost > r.perMinute {
		t = (mi + 1) * minuteMS
	}
	if dc+r.cost > r.perDay {
		t = max(t, (di+1)*dayMS)
	}
	return t
}

// suspend starts a suspension at now, one level above the previous one when that ended within
// the suspension memory, and clears the rejection window.
func (st *state) suspend(now int64, r rules) {
	level := int64(0)
	if st.su > 0 && now < st.su+r.memory {
		level = min(st.sl+1, maxLevel)
	}
	st.su, st.sl, st.rs, st.rc = now+backoff(level, r), level, 0, 0
}

// backoff returns the length of a suspension of the given level: base doubled level times,
// at most the ceiling.
func backoff(level int64, r rules) int64 {
	d := r.base
	for i := int64(0); i < level && d < r.ceiling; i++ {
		d *= 2
	}
	return min(d, r.ceiling)
}

// expiry returns when st stops mattering: the end of its day window, of its rejection window
// or of the memory of its latest suspension, whichever is last.
func (st *state) expiry(r rules) int64 {
	return max((st.dw+1)*dayMS, st.rs+r.window, st.su+r.memory)
}

// decision turns a raw decision into a Decision under p.
func decision(p Policy, r raw) Decision {
	mi, di := r.now/minuteMS, r.now/dayMS
	d := Decision{
		Outcome: r.outcome,
		Now:     msTime(r.now),
		Minute:  Window{"minute", time.Minute, p.PerMinute, r.mc, msTime((mi + 1) * minuteMS)},
		Day:     Window{"day", 24 * time.Hour, p.PerDay, r.dc, msTime((di + 1) * dayMS)},
	}
	if r.outcome != Allowed {
		d.RetryAt = msTime(r.retryAt)
	}
	return d
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
