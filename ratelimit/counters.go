package ratelimit

import (
	"context"
	"net/netip"
	"strconv"
	"time"
)

// Counters keep the rate-limit state of every subject.
type Counters interface {
	// Take decides one request of subject s under p costing n units (a request is one; a
	// GraphQL operation is charged its cost), at the store's clock. The request is Allowed
	// only when both windows have room for all n, and then charged n to both; otherwise
	// nothing is charged (a Limited request only counts toward suspension). Take is atomic
	// per subject. It returns an error only when the store cannot answer (Redis unreachable);
	// the Limiter then applies its failure policy. An n below 1 counts as 1.
	Take(ctx context.Context, s Subject, p Policy, n int64) (Decision, error)
	// Check decides as Take of one unit does, but an Allowed request is not charged: it tells
	// whether s has room without spending it. A rejection counts toward suspension as Take's does.
	Check(ctx context.Context, s Subject, p Policy) (Decision, error)
}

// checkAll decides a Check of each of subjs under p in s: at once in RedisCounters (see its
// checkAll), one after the other in any other Counters. It fails with the first error.
func checkAll(ctx context.Context, s Counters, subjs []Subject, p Policy) ([]Decision, error) {
	if rs, ok := s.(*RedisCounters); ok {
		return rs.checkAll(ctx, subjs, p)
	}
	out := make([]Decision, len(subjs))
	for i, subj := range subjs {
		d, err := s.Check(ctx, subj, p)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// Subject is who a request is charged to: an API key (KeyID non-zero) or, for requests
// without a valid key, a client address (KeyID zero). Key ids start at 1.
type Subject struct {
	KeyID int64
	Addr  netip.Addr // zero Addr: the shared bucket of requests whose address is unknown
}

// KeySubject returns the subject of API key id.
func KeySubject(id int64) Subject { return Subject{KeyID: id} }

// AddrSubject returns the subject of a client address, normalized as the package doc says:
// IPv4-mapped addresses as IPv4, IPv6 addresses reduced to their /64 prefix, zones dropped.
func AddrSubject(a netip.Addr) Subject {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64) // cannot fail: a is a valid IPv6 address and 64 <= 128
		a = p.Addr()
	}
	return Subject{Addr: a}
}

// String returns the subject as it appears in Redis keys and logs: "k:42", "a:203.0.113.7",
// "a:2001:db8::" or "a:unknown".
func (s Subject) String() string { return string(s.appendTo(nil)) }

func (s Subject) appendTo(b []byte) []byte {
	if s.KeyID != 0 {
		return strconv.AppendInt(append(b, "k:"...), s.KeyID, 10)
	}
	if !s.Addr.IsValid() {
		return append(b, "a:unknown"...)
	}
	return s.Addr.AppendTo(append(b, "a:"...))
}

// hash spreads subjects over the shards of the MemoryCounters.
func (s Subject) hash() uint64 {
	if s.KeyID != 0 {
		return mix(uint64(s.KeyID))
	}
	b := s.Addr.As16()
	var hi, lo uint64
	for i := range 8 {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return mix(hi ^ mix(lo))
}

// mix is the splitmix64 finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Policy is what one Take enforces: the subject's two limits and the suspension rules.
// A limit below 1 admits nothing.
type Policy struct {
	PerMinute  int64
	PerDay     int64
	Suspension Suspension
}

// Suspension holds the suspension rules; see Config for their meaning.
type Suspension struct {
	After  int64 // rate_limited rejections that trigger a suspension; 0 disables suspensions
	Window time.Duration
	Base   time.Duration
	Max    time.Duration
	Memory time.Duration
}

// Outcome is what the Counters decided for one request.
type Outcome uint8

// The outcomes of Take.
const (
	Allowed   Outcome = iota + 1 // admitted, and by Take charged to both windows
	Limited                      // rejected: a window is exhausted; nothing charged
	Suspended                    // rejected: the subject is suspended; nothing charged
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Allowed:
		return "allowed"
	case Limited:
		return "limited"
	case Suspended:
		return "suspended"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Window is the state of one window after a decision.
type Window struct {
	Name   string        // "minute" or "day", as in the RateLimit headers
	Length time.Duration // one minute or one day
	Limit  int64
	Used   int64     // units charged in the current window, this request's included when Allowed
	Reset  time.Time // when the window ends and Used returns to zero
}

// Remaining returns how many more units the window admits, never below zero.
func (w Window) Remaining() int64 { return max(0, w.Limit-w.Used) }

// Decision is the Counters' answer for one request.
type Decision struct {
	Outcome Outcome
	Now     time.Time // the store's clock at the decision
	Minute  Window
	Day     Window
	// RetryAt is zero when Allowed; otherwise the earliest moment at which a retry is admitted
	// absent other traffic of the subject: the later of the suspension's end and the resets of
	// every exhausted window.
	RetryAt time.Time
}

// Binding returns the window that binds first: the one with fewer requests remaining, on a tie
// the one that resets later.
func (d Decision) Binding() Window {
	m, dy := d.Minute.Remaining(), d.Day.Remaining()
	if m < dy || (m == dy && d.Minute.Reset.After(d.Day.Reset)) {
		return d.Minute
	}
	return d.Day
}

// RetryAfter returns the time until RetryAt in whole seconds, rounded up, at least one second.
func (d Decision) RetryAfter() time.Duration {
	return max(time.Second, ceilSeconds(d.RetryAt.Sub(d.Now)))
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) time.Duration {
	if r := d % time.Second; r > 0 {
		d += time.Second - r
	}
	return d.Truncate(time.Second)
}
