package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Config holds every setting of the Limiter. Start from DefaultConfig; New validates it.
type Config struct {
	// AnonymousPerMinute and AnonymousPerDay limit the requests without a valid key, per
	// client address; stricter than the free plan (60/min, 1,000/day) so that key guessing is
	// slow. Defaults: 20 and 200.
	AnonymousPerMinute int64
	AnonymousPerDay    int64

	// SuspendAfter is the number of rate_limited rejections within SuspendWindow (counted from
	// the first of them) that suspends a subject; 0 disables suspensions. Defaults: 20, 1 minute.
	SuspendAfter  int64
	SuspendWindow time.Duration

	// SuspendBase is the length of a first suspension; each suspension that starts within
	// SuspendMemory after the previous one ended lasts twice as long as that one, at most
	// SuspendMax. Defaults: 5 minutes, 1 hour, 24 hours.
	SuspendBase   time.Duration
	SuspendMax    time.Duration
	SuspendMemory time.Duration

	// OverBudgetKeyReads is how many key-table reads a second (and at once) this instance
	// makes for keys sent from client addresses over their anonymous budget or suspended that
	// Listed does not vouch for: such a request is refused before the read only once these are
	// spent, so that guesses from such addresses cost at most this many reads a second, while a
	// valid key that is not listed yet (stored since the last refresh of the set of valid keys)
	// can still be read. 0: none (every such request is refused before the read). Default: 100.
	OverBudgetKeyReads int
	// Listed, when not nil, reports whether a key (by its hash) sent from an address over its
	// budget or suspended is in the instance's set of valid keys (auth.Authenticator.Listed):
	// such a key is read, whatever OverBudgetKeyReads has left, so that a flood of guesses,
	// which are never listed, cannot lock out a valid key this instance has not cached yet (after
	// a restart, every key) behind an address that others exhausted (a NAT). It is called
	// before the read, on the request's goroutine. Default: nil (no key is vouched for).
	Listed func(ctx context.Context, hash string) bool
	// FailOpen admits requests uncounted when the store fails; false answers 503 unavailable
	// instead. Default: true.
	FailOpen bool

	// RedisKeyPrefix starts every Redis key (pass it to NewRedisCounters; New only validates it).
	// It must not contain "{" or "}". Default: "rl:".
	RedisKeyPrefix string

	// Logger receives the store-failure lines. Default (nil): slog.Default().
	Logger *slog.Logger

	// OnDecision, when not nil, is called once for every decision the store makes, with its
	// outcome and the plan name of the request's key ("anonymous" for requests without a
	// valid key): for metrics. It runs on the request's goroutine, so it must be fast and
	// safe for concurrent use. It is not called when the store fails (see
	// Limiter.StoreErrors). Default: nil.
	OnDecision func(outcome Outcome, plan string)
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		AnonymousPerMinute: 20,
		AnonymousPerDay:    200,
		SuspendAfter:       20,
		SuspendWindow:      time.Minute,
		SuspendBase:        5 * time.Minute,
		SuspendMax:         time.Hour,
		SuspendMemory:      24 * time.Hour,
		OverBudgetKeyReads: 100,
		FailOpen:           true,
		RedisKeyPrefix:     "rl:",
	}
}

// validate reports the first setting that cannot work.
// Validate reports the first setting of c that cannot work. New calls it; config calls it too,
// so that a bad setting stops the service before it changes anything.
func (c Config) Validate() error {
	switch {
	case c.AnonymousPerMinute < 1:
		return fmt.Errorf("AnonymousPerMinute must be at least 1; got %d", c.AnonymousPerMinute)
	case c.AnonymousPerDay < 1:
		return fmt.Errorf("AnonymousPerDay must be at least 1; got %d", c.AnonymousPerDay)
	case c.OverBudgetKeyReads < 0:
		return fmt.Errorf("OverBudgetKeyReads must be 0 (none) or more; got %d", c.OverBudgetKeyReads)
	case c.SuspendAfter < 0:
		return fmt.Errorf("SuspendAfter must be 0 (off) or more; got %d", c.SuspendAfter)
	case strings.ContainsAny(c.RedisKeyPrefix, "{}"):
		return fmt.Errorf("RedisKeyPrefix must not contain braces; got %q", c.RedisKeyPrefix)
	}
	if c.SuspendAfter == 0 {
		return nil
	}
	return c.validateSuspension()
}

func (c Config) validateSuspension() error {
	switch {
	case c.SuspendWindow < time.Millisecond:
		return fmt.Errorf("SuspendWindow must be at least 1ms; got %v", c.SuspendWindow)
	case c.SuspendBase < time.Millisecond:
		return fmt.Errorf("SuspendBase must be at least 1ms; got %v", c.SuspendBase)
	case c.SuspendMax < c.SuspendBase:
		return fmt.Errorf("SuspendMax must be at least SuspendBase (%v); got %v", c.SuspendBase, c.SuspendMax)
	case c.SuspendMemory < 0:
		return fmt.Errorf("SuspendMemory must not be negative; got %v", c.SuspendMemory)
	}
	return nil
}

// suspension returns the suspension rules of c.
func (c Config) suspension() Suspension {
	return Suspension{
		After: c.SuspendAfter, Window: c.SuspendWindow,
		Base: c.SuspendBase, Max: c.SuspendMax, Memory: c.SuspendMemory,
	}
}
