package ratelimit

import (
	"net/http"
	"strconv"
	"time"
)

// headerKeys are the rate-limit header names in their canonical form (X-RateLimit-Limit is
// X-Ratelimit-Limit to net/http), so that they are stored without canonicalizing each time.
var headerKeys = [...]string{
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Ratelimit-Policy", "Ratelimit",
}

// setHeaders sets the rate-limit headers of d, as the package doc describes. The five values
// share one string and one slice: two allocations per response.
func setHeaders(h http.Header, d Decision) {
	w := d.Binding()
	remaining, reset := w.Remaining(), w.Reset
	if d.Outcome == Suspended { // nothing is admitted before RetryAt, whatever the windows say
		remaining, reset = 0, d.RetryAt
	}
	var (
		buf  [192]byte
		ends [len(headerKeys)]int
	)
	b := strconv.AppendInt(buf[:0], w.Limit, 10)
	ends[0] = len(b)
	b = strconv.AppendInt(b, remaining, 10)
	ends[1] = len(b)
	b = strconv.AppendInt(b, ceilUnix(reset), 10)
	ends[2] = len(b)
	b = appendPolicy(append(appendPolicy(b, d.Minute), ", "...), d.Day)
	ends[3] = len(b)
	b = appendLimit(b, w.Name, remaining, int64(ceilSeconds(reset.Sub(d.Now))/time.Second))
	ends[4] = len(b)

	all, vals, from := string(b), make([]string, len(headerKeys)), 0
	for i, k := range headerKeys {
		vals[i] = all[from:ends[i]]
		h[k] = vals[i : i+1 : i+1]
		from = ends[i]
	}
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
	b = strconv.AppendQuote(b, w.Name)
	b = strconv.AppendInt(append(b, ";q="...), w.Limit, 10)
	return strconv.AppendInt(append(b, ";w="...), int64(w.Length/time.Second), 10)
}

// appendLimit appends the RateLimit value: "minute";r=47;t=13.
func appendLimit(b []byte, name string, remaining, secs int64) []byte {
	b = strconv.AppendQuote(b, name)
	b = strconv.AppendInt(append(b, ";r="...), remaining, 10)
	return strconv.AppendInt(append(b, ";t="...), secs, 10)
}
