package conns

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// run renews the leases every RenewEvery and removes those let go as they are, until ctx
// ends; failed reports each failure (the leases then end by themselves, or are renewed once
// Redis answers). Renewals and removals go one after the other from this goroutine, so a lease
// let go is never renewed after its removal.
func (l *Leases) run(ctx context.Context, failed func(error)) {
	t := time.NewTicker(RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.renew(ctx); err != nil {
				failed(err)
			}
		case <-l.wake:
		}
		if err := l.remove(ctx); err != nil {
			failed(err)
		}
	}
}

// renew sends one renewal per set held, renewBatch to a pipeline, and cuts off the holders of
// the leases Redis had lost and could not take back under their key's cap (cutOff); it returns
// the first error.
func (l *Leases) renew(ctx context.Context) error {
	sets, args := l.renewals()
	ctx, cancel := context.WithTimeout(ctx, RenewEvery)
	defer cancel()
	var first error
	lost := map[string][]string{}
	for start := 0; start < len(sets); start += renewBatch {
		end := min(start+renewBatch, len(sets))
		if err := l.renewBatch(ctx, sets[start:end], args[start:end], lost); err != nil && first == nil {
			first = err
		}
	}
	l.cutOff(lost)
	return first
}

// renewals returns the sets held and, for each, the arguments of its renewal: the lease, the
// cap and the tokens held.
func (l *Leases) renewals() ([]string, [][]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sets := make([]string, 0, len(l.held))
	args := make([][]any, 0, len(l.held))
	for set, tokens := range l.held {
		a := make([]any, 0, 3+len(tokens))
		a = append(a, "renew", LeaseFor.Milliseconds(), l.caps[set])
		for tok := range tokens {
			a = append(a, tok)
		}
		sets, args = append(sets, set), append(args, a)
	}
	return sets, args
}

// cutOff forgets the tokens of lost, by set, that are still held, and cuts off their holders.
func (l *Leases) cutOff(lost map[string][]string) {
	var cuts []func()
	l.mu.Lock()
	for set, tokens := range lost {
		for _, tok := range tokens {
			if cut, held := l.held[set][tok]; held {
				l.forget(set, tok)
				cuts = append(cuts, cut)
			}
		}
	}
	l.mu.Unlock()
	for _, cut := range cuts {
		cut()
	}
}

// renewBatch renews sets with args in one pipeline (evalPipelined); it adds to lost, by set,
// the tokens Redis had lost and did not take back, and returns the first error.
func (l *Leases) renewBatch(ctx context.Context, sets []string, args [][]any, lost map[string][]string) error {
	var first error
	for i, cmd := range l.evalPipelined(ctx, sets, args) {
		tokens, err := cmd.StringSlice()
		if err != nil {
			if first == nil {
				first = fmt.Errorf("live: renewing leases: %w", err)
			}
			continue
		}
		if len(tokens) > 0 {
			lost[sets[i]] = tokens
		}
	}
	return first
}

// evalPipelined runs the script on each of sets with its args in one pipeline, and again with
// EVAL those that Redis answered NOSCRIPT (a restarted node); it returns the commands, one per
// set.
func (l *Leases) evalPipelined(ctx context.Context, sets []string, args [][]any) []*redis.Cmd {
	pipe := l.client.Pipeline()
	cmds := make([]*redis.Cmd, len(sets))
	for i, set := range sets {
		cmds[i] = leasesScript.EvalSha(ctx, pipe, []string{set}, args[i]...)
	}
	_, _ = pipe.Exec(ctx)
	reload := false
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmds[i] = leasesScript.Eval(ctx, pipe, []string{sets[i]}, args[i]...)
			reload = true
		}
	}
	if reload {
		_, _ = pipe.Exec(ctx)
	}
	return cmds
}

// remove removes the leases let go, in one pipeline. Those it could not remove end by
// themselves. A removal under way is not abandoned when ctx ends (run's, as the instance shuts
// down): the leases it took from released would be in neither released nor held, and
// releaseAll would leave their slots taken for LeaseFor.
func (l *Leases) remove(ctx context.Context) error {
	gone := l.takeReleased()
	if len(gone) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RenewEvery)
	defer cancel()
	pipe := l.client.Pipeline()
	for set, tokens := range gone {
		members := make([]any, len(tokens))
		for i, tok := range tokens {
			members[i] = tok
		}
		pipe.ZRem(ctx, set, members...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("live: removing leases: %w", err)
	}
	return nil
}

// takeReleased returns the tokens let go and not yet removed, by set, and forgets them.
func (l *Leases) takeReleased() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	gone := l.released
	if len(gone) > 0 {
		l.released = map[string][]string{}
	}
	return gone
}

// releaseAll lets every lease go and removes them; run must have returned.
func (l *Leases) releaseAll(ctx context.Context) error {
	l.mu.Lock()
	for set, tokens := range l.held {
		for tok := range tokens {
			l.released[set] = append(l.released[set], tok)
		}
	}
	clear(l.held)
	clear(l.caps)
	l.mu.Unlock()
	return l.remove(ctx)
}
