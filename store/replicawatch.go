package store

import (
	"context"
	"time"
)

// start starts the watchers: one settles pets on the primary (a failed read is tried again
// at the next poll: a transaction that stays open holds the settled id back, and with it the
// pages that replicas serve), one samples the primary's position, one per replica reads its
// position.
func (rs *Replicas) start() {
	ctx, stop := context.WithCancel(context.Background())
	rs.stop = stop
	rs.watchers.Go(func() { every(ctx, func(ctx context.Context) { _, _ = rs.settler.Advance(ctx) }) })
	rs.watchers.Go(func() { every(ctx, rs.samplePrimary) })
	for _, m := range rs.members {
		rs.watchers.Go(func() { every(ctx, func(ctx context.Context) { m.fresh.Store(rs.observe(ctx, m)) }) })
	}
}

// every calls fn at once, then every replicaPoll after it returns, until ctx is done.
func every(ctx context.Context, fn func(context.Context)) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn(ctx)
		t.Reset(replicaPoll)
	}
}

// samplePrimary records the primary's position, with the pets settled before it was read.
func (rs *Replicas) samplePrimary(ctx context.Context) {
	settled := rs.settler.Settled() // settled before the position is read, so covered by it
	at := rs.now()
	ctx, cancel := context.WithTimeout(ctx, MaxReplicaLag)
	defer cancel()
	var s string
	if err := rs.primary.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&s); err != nil {
		return // no sample: the replicas fall behind MaxReplicaLag and are skipped
	}
	pos, err := parseGTIDPos(s)
	if err != nil {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	keep := 0
	for keep < len(rs.samples) && at.Sub(rs.samples[keep].at) > MaxReplicaLag {
		keep++
	}
	rs.samples = append(rs.samples[keep:], sample{at: at, pos: pos, settled: settled})
}

// observe returns what replica m holds: the freshness of the newest sample whose position it
// has applied, or nil when it does not answer or has applied none.
func (rs *Replicas) observe(ctx context.Context, m *replica) *freshness {
	ctx, cancel := context.WithTimeout(ctx, MaxReplicaLag)
	defer cancel()
	var s string
	if err := m.db.SQL().QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&s); err != nil {
		return nil
	}
	pos, err := parseGTIDPos(s)
	if err != nil {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i := len(rs.samples) - 1; i >= 0; i-- {
		if s := rs.samples[i]; pos.reached(s.pos) {
			return &freshness{asOf: s.at, settled: s.settled}
		}
	}
	return nil
}
