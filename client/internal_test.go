package client

import (
	"net/http"
	"testing"
	"time"
)

// TestDelayIsFullJitterOverRetryAfter checks the bounds of each wait: Retry-After, plus a
// uniform draw from 0 to the backoff ceiling, which doubles from BaseDelay up to MaxDelay.
func TestDelayIsFullJitterOverRetryAfter(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}.withDefaults()
	var asked []int64
	lowest := func(n int64) int64 { asked = append(asked, n); return 0 }
	highest := func(n int64) int64 { return n - 1 }
	for _, tc := range []struct {
		n          int
		retryAfter time.Duration
		ceiling    time.Duration
	}{
		{1, 0, 100 * time.Millisecond},
		{2, 0, 200 * time.Millisecond},
		{4, 0, 800 * time.Millisecond},
		{5, 0, time.Second},
		{64, 0, time.Second},
		{1, 2 * time.Second, 100 * time.Millisecond},
		{3, time.Second, 400 * time.Millisecond},
	} {
		asked = nil
		if got := p.delay(tc.n, tc.retryAfter, lowest); got != tc.retryAfter || asked[0] != int64(tc.ceiling)+1 {
			t.Errorf("delay(%d, %v) with the lowest draw: got %v from [0, %v); want %v from [0, %v]",
				tc.n, tc.retryAfter, got, time.Duration(asked[0]), tc.retryAfter, tc.ceiling)
		}
		if got := p.delay(tc.n, tc.retryAfter, highest); got != tc.retryAfter+tc.ceiling {
			t.Errorf("delay(%d, %v) with the highest draw: got %v; want %v", tc.n, tc.retryAfter, got, tc.retryAfter+tc.ceiling)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"13":                            13 * time.Second,
		" 1 ":                           time.Second,
		"0":                             0,
		"-5":                            0,
		"soon":                          0,
		"99999999999999999999":          0,
		"Thu, 01 Jan 2026 00:00:30 GMT": 30 * time.Second,
		"Wed, 31 Dec 2025 23:59:00 GMT": 0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q): got %v; want %v", v, got, want)
		}
	}
}

func TestNextLink(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   string
	}{
		{nil, ""},
		{[]string{`</v1/pets?after=abc&limit=20>; rel="next"`}, "/v1/pets?after=abc&limit=20"},
		{[]string{`</v1/pets?after=a>;rel=next`}, "/v1/pets?after=a"},
		{[]string{`</v1/pets>; rel="successor-version"`}, ""},
		{[]string{`</a>; rel="prev", </b>; title="x, y"; rel="NEXT last"`}, "/b"},
		{[]string{`</a>; rel="prev"`, `</b>; rel="next"`}, "/b"},
		{[]string{`</a>; rel="prev"; rel="next"`}, ""},
		{[]string{`garbage, </b>; rel="next"`}, ""},
		{[]string{`</b; rel="next"`}, ""},
	} {
		if got := nextLink(tc.values); got != tc.want {
			t.Errorf("nextLink(%q): got %q; want %q", tc.values, got, tc.want)
		}
	}
}

func TestParseRateLimitNeedsTheLimit(t *testing.T) {
	if rl, ok := parseRateLimit(http.Header{"Retry-After": {"1"}}, time.Now()); ok {
		t.Errorf("an answer without X-RateLimit-Limit: got %+v; want none", rl)
	}
}
