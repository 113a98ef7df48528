package client

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RetryPolicy bounds the retries of one request. Its zero value means the defaults.
type RetryPolicy struct {
	// MaxAttempts is the most times one request is sent, the first time included; 1 disables
	// retries. Default: 4.
	MaxAttempts int

	// BaseDelay is the ceiling of the backoff before the first retry; it doubles with each
	// further retry, up to MaxDelay. Default: 250ms.
	BaseDelay time.Duration

	// MaxDelay caps the ceiling of the backoff. Default: 8s.
	MaxDelay time.Duration

	// MaxRetryAfter is the longest Retry-After that is waited for: an answer that asks for
	// longer (a suspended key's 429, say) is returned at once. Default: 1 minute, the length
	// of the shortest rate-limit window.
	MaxRetryAfter time.Duration
}

// withDefaults returns p with its zero fields set to their defaults.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 250 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 8 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = time.Minute
	}
	return p
}

// delay returns how long to wait before retry n (1 for the first retry) after an answer
// that asked for retryAfter (0 when it did not): retryAfter, then exponential backoff with
// full jitter, a duration drawn by random (which returns a number in [0, n)) uniformly from
// [0, min(MaxDelay, BaseDelay·2^(n-1))]. The jitter spreads the clients that one Retry-After
// would otherwise send back at the same instant.
func (p RetryPolicy) delay(n int, retryAfter time.Duration, random func(int64) int64) time.Duration {
	ceiling := p.MaxDelay
	if n-1 < 62 && p.BaseDelay <= p.MaxDelay>>(n-1) {
		ceiling = p.BaseDelay << (n - 1)
	}
	return retryAfter + time.Duration(random(int64(ceiling)+1))
}

// idempotencyKeyHeader is the header that makes a retried POST safe.
const idempotencyKeyHeader = "Idempotency-Key"

// transport is the HttpRequestDoer under the generated client: it sends each request
// through next, with an Idempotency-Key on every POST, retries it as RetryPolicy allows and
// records the rate-limit headers of every answer.
type transport struct {
	next   HttpRequestDoer
	policy RetryPolicy
	random func(int64) int64 // a number in [0, n); math/rand/v2's Int64N

	mu   sync.Mutex
	last RateLimit
}

// Do sends req, and again while the answer says to retry (see the package documentation),
// and returns the last answer. A POST without an Idempotency-Key gets a random one, the same
// for all its attempts.
func (t *transport) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.Method == http.MethodPost && req.Header.Get(idempotencyKeyHeader) == "" {
		req = req.Clone(ctx)
		req.Header.Set(idempotencyKeyHeader, rand.Text())
	}
	for n := 1; ; n++ {
		resp, err := t.next.Do(req)
		if err == nil {
			t.record(resp.Header)
		}
		retryAfter, again := retryable(ctx, req, resp, err)
		if !again || n >= t.policy.MaxAttempts || retryAfter > t.policy.MaxRetryAfter {
			return resp, err
		}
		wait := t.policy.delay(n, retryAfter, t.random)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return resp, err // the answer now is worth more than a retry the deadline cuts short
		}
		next, ok := resend(req)
		if !ok {
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
			resp.Body.Close()
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
		req = next
	}
}

// resend returns a copy of req to send again, with a fresh body; false when its body cannot
// be read again (a request made with a reader other than bytes.Reader, bytes.Buffer or
// strings.Reader has no GetBody).
func resend(req *http.Request) (*http.Request, bool) {
	next := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return next, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	next.Body = body
	return next, true
}

// retryable reports whether the answer to req (resp, or the error err) is worth another
// attempt, and the Retry-After it asked for (0 when none).
func retryable(ctx context.Context, req *http.Request, resp *http.Response, err error) (time.Duration, bool) {
	if err != nil {
		// The connection failed: the request may or may not have been served, which is safe
		// to retry for reads and for POSTs carrying an Idempotency-Key (every POST here).
		return 0, ctx.Err() == nil
	}
	retryAfter := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return retryAfter, true
	case http.StatusConflict: // idempotency_key_in_use: the first attempt is still in flight
		return retryAfter, req.Header.Get(idempotencyKeyHeader) != ""
	}
	return 0, false
}

// parseRetryAfter returns the wait that a Retry-After value asks for: whole seconds, or an
// HTTP date (RFC 9110); 0 when v is empty, malformed or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(min(max(s, 0), 1<<31)) * time.Second // 68 years at most: no overflow
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// sleep waits d, or until ctx is done (then it returns ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
