package client

import (
	"net/http"
	"strconv"
	"time"
)

// RateLimit is the rate-limit state that an answer of the service reported: every /v1 answer
// carries it, for the window (minute or day) that binds first.
type RateLimit struct {
	// Limit is the number of requests that window allows (X-RateLimit-Limit).
	Limit int64
	// Remaining is the number of requests left in it (X-RateLimit-Remaining).
	Remaining int64
	// Reset is when it resets (X-RateLimit-Reset, Unix seconds).
	Reset time.Time
	// Policy is the raw RateLimit-Policy header: every window with its quota q and length w
	// in seconds, for example `"minute";q=60;w=60, "day";q=1000;w=86400`.
	Policy string
	// Current is the raw RateLimit header: the binding window with the requests remaining r
	// and the seconds t until it resets, for example `"minute";r=47;t=13`.
	Current string
	// RetryAfter is the wait that the answer's Retry-After asked for (429 and 503 answers),
	// 0 when it had none.
	RetryAfter time.Duration
}

// parseRateLimit returns the rate-limit state of h and whether h carries one (its
// X-RateLimit-Limit is an integer).
func parseRateLimit(h http.Header, now time.Time) (RateLimit, bool) {
	limit, err := strconv.ParseInt(h.Get("X-RateLimit-Limit"), 10, 64)
	if err != nil {
		return RateLimit{}, false
	}
	rl := RateLimit{
		Limit:      limit,
		Policy:     h.Get("RateLimit-Policy"),
		Current:    h.Get("RateLimit"),
		RetryAfter: parseRetryAfter(h.Get("Retry-After"), now),
	}
	rl.Remaining, _ = strconv.ParseInt(h.Get("X-RateLimit-Remaining"), 10, 64)
	if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		rl.Reset = time.Unix(reset, 0)
	}
	return rl, true
}

// record keeps the rate-limit state of an answer's headers h, when it has one.
func (t *transport) record(h http.Header) {
	if rl, ok := parseRateLimit(h, time.Now()); ok {
		t.mu.Lock()
		t.last = rl
		t.mu.Unlock()
	}
}

// rateLimit returns the state that record kept last.
func (t *transport) rateLimit() RateLimit {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}
