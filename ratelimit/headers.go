package ratelimit

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// headerKeys are the rate-limit header names in their canonical form (X-RateLimit-Limit is
// X-Ratelimit-Limit to net/http), so that they are stored without canonicalizing each time.
var headerKeys = [...]string{
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Ratelimit-Policy", "Ratelimit",
}

// setHeaders sets the rate-limit headers of d, as the package doc describes. Four of the
// values share one string, the policy's comes from policies, and the five share one slice:
// two allocations per response.
func setHeaders(h http.Header, d Decision) {
	w := d.Binding()
	remaining, reset := w.Remaining(), w.Reset
	if d.Outcome == Suspended { // nothing is admitted before RetryAt, whatever the windows say
		remaining, reset = 0, d.RetryAt
	}
	var (
		buf  [128]byte
		ends [len(headerKeys)]int
	)
	b := strconv.AppendInt(buf[:0], w.Limit, 10)
	ends[0] = len(b)
	b = strconv.AppendInt(b, remaining, 10)
	ends[1] = len(b)
	b = strconv.AppendInt(b, ceilUnix(reset), 10)
	ends[2] = len(b)
	ends[3] = len(b) // the policy is not in b
	b = appendLimit(b, w.Name, remaining, int64(ceilSeconds(reset.Sub(d.Now))/time.Second))
	ends[4] = len(b)

	all, vals, from := string(b), make([]string, len(headerKeys)), 0
	for i, k := range headerKeys {
		vals[i] = all[from:ends[i]]
		if i == policyHeader {
			vals[i] = policies.value(d.Minute, d.Day)
		}
		h[k] = vals[i : i+1 : i+1]
		from = ends[i]
	}
}

// policyHeader is the index of Ratelimit-Policy in headerKeys.
const policyHeader = 3

// policies holds the RateLimit-Policy values of the windows in use, so that a response does not
// format its own: they are the same for every request of a plan.
var policies policyCache

// policyCache is a fixed-size cache of RateLimit-Policy values by the windows they describe,
// direct-mapped: a policy that meets another in its slot replaces it. It is safe for concurrent
// use, without a lock.
type policyCache [64]atomic.Pointer[policyEntry]

// policyEntry is one RateLimit-Policy value and the windows it describes.
type policyEntry struct {
	minute, day policyKey
	value       string
}

// policyKey is what RateLimit-Policy says of a window.
type policyKey struct {
	name   string
	limit  int64
	length time.Duration
}

// keyOf returns the policyKey of w.
func keyOf(w Window) policyKey { return policyKey{w.Name, w.Limit, w.Length} }

// value returns the RateLimit-Policy value of the windows minute and day.
func (c *policyCache) value(minute, day Window) string {
	m, d := keyOf(minute), keyOf(day)
	slot := &c[uint64(m.limit*31+d.limit)%uint64(len(c))]
	if e := slot.Load(); e != nil && e.minute == m && e.day == d {
		return e.value
	}
	e := &policyEntry{minute: m, day: d, value: string(appendPolicy(append(appendPolicy(nil, minute), ", "...), day))}
	slot.Store(e)
	return e.value
}

// ceilUnix returns t in Unix seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// appendPolicy appends one RateLimit-Policy item: "minute";q=60;w=60.
func appendPolicy(b []byte, w Window) []byte {
	b = appendName(b, w.Name)
	b = strconv.AppendInt(append(b, ";q="...), w.Limit, 10)
	return strconv.AppendInt(append(b, ";w="...), int64(w.Length/time.Second), 10)
}

// appendLimit appends the RateLimit value: "minute";r=47;t=13.
func appendLimit(b []byte, name string, remaining, secs int64) []byte {
	b = appendName(b, name)
	b = strconv.AppendInt(append(b, ";r="...), remaining, 10)
	return strconv.AppendInt(append(b, ";t="...), secs, 10)
}

// appendName appends a window's name quoted as strconv.AppendQuote quotes it: a name of
// letters, as every window's is, needs no escaping.
func appendName(b []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return strconv.AppendQuote(b, name)
		}
	}
	return append(append(append(b, '"'), name...), '"')
}
