package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// SettleDelay is how long after a pet was seen committed every lower id still missing from
// the table is taken as never to come: an insert that took such an id commits, or fails,
// within it. See Settler.
const SettleDelay = time.Second

// settleBatch bounds the ids that one settling read locks and returns.
const settleBatch = 10_000

// Settler knows up to which pet id every pet is settled: committed, or never to be (its insert
// failed or rolled back). A cursor, a subscription's mark or a replica's page may pass a
// settled id and lose nothing: no pet with a lower id can appear later.
//
// AUTO_INCREMENT hands out an id before its row is in the table. A page is a locking read
// (graph/pages.go), which waits for every uncommitted row it meets; but a row not in the index
// yet, whose insert took its id a moment before, cannot be waited for: while pet 98 is being
// inserted, pet 99 can commit and be listed, and a cursor past 99 would skip 98 for good. Two
// rules settle ids:
//
//   - Gapless: where one counter hands out every id in steps of one (one MySQL or MariaDB
//     primary, auto_increment_increment 1), a locking read that finds every id from the
//     settled one up to some id settles them at once: each was waited for, and none is
//     missing. This is the common case and costs nothing more than the page's own read.
//   - Time: an id is settled once a pet with a higher or equal id was seen committed at least
//     SettleDelay before. Under the gapless rule it settles the holes, the ids of inserts that
//     failed or rolled back; on a Galera cluster, where every node has its own counter
//     (auto_increment_increment, one offset per node) and holes are the rule, it is the only
//     one.
//
// So a page, a subscription or a replica passes an id it has not seen only when that id was
// missing for SettleDelay after a higher one committed: a write that takes longer than that
// between taking its id and committing can be skipped. A Settler is safe for concurrent use.
type Settler struct {
	db      *sql.DB // the primary
	idsSQL  string  // the ids and statuses in (?, ?], locking
	maxSQL  string  // the highest id
	timeout time.Duration
	delay   time.Duration
	gapless bool

	mu      sync.Mutex
	settled int64         // every id up to it is settled
	seen    []observation // ids seen committed, ascending, not yet settling others
}

// observation is the highest id reads saw committed, and when the last of them ended; reads
// that ended within delay/8 of the first are merged into one observation.
type observation struct {
	first, at time.Time
	id        int64
}

// newSettler returns the Settler of the MySQL primary db, whose statements take at most
// timeout: gapless unless ids come in steps other than one (a Galera cluster).
func newSettler(db *sql.DB, timeout time.Duration, gapless bool) *Settler {
	head := fmt.Sprintf("/*M! SET STATEMENT max_statement_time=%.3f FOR*/ SELECT /*+ MAX_EXECUTION_TIME(%d) */ ",
		timeout.Seconds(), timeout.Milliseconds())
	return &Settler{db: db, timeout: timeout, delay: SettleDelay, gapless: gapless,
		idsSQL: head + fmt.Sprintf("id, status FROM pets WHERE id > ? AND id <= ? ORDER BY id LIMIT %d LOCK IN SHARE MODE", settleBatch),
		maxSQL: head + "MAX(id) FROM pets"}
}

// Settled returns the highest id settled now: every pet up to it is in the table, committed,
// or never will be. A locking read that starts after the call sees all of them.
func (s *Settler) Settled() int64 {
	return s.settledAt(time.Now())
}

// settledAt returns the highest id settled at now.
func (s *Settler) settledAt(now time.Time) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for ; i < len(s.seen) && now.Sub(s.seen[i].at) >= s.delay; i++ {
		s.settled = max(s.settled, s.seen[i].id)
	}
	s.seen = append(s.seen[:0], s.seen[i:]...)
	return s.settled
}

// observe notes that a read that ended at t saw id committed (the time rule).
func (s *Settler) observe(t time.Time, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.seen)
	switch {
	case id <= s.settled || (n > 0 && id <= s.seen[n-1].id):
		// An earlier observation of a higher id settles it sooner.
	case n > 0 && t.Sub(s.seen[n-1].first) < s.delay/8:
		// Merged into the last observation, made later: at most 9 or so are kept.
		s.seen[n-1].at, s.seen[n-1].id = t, id
	default:
		s.seen = append(s.seen, observation{first: t, at: t, id: id})
	}
}

// found notes that a locking read that ended at t found exactly ids (ascending, committed)
// among the ids above from up to the last of them, and returns the settled id: under the
// gapless rule the ids that follow the settled one without a hole are settled; the last id
// found is observed for the time rule.
func (s *Settler) found(t time.Time, from int64, ids []int64) int64 {
	if len(ids) == 0 {
		return s.settledAt(t)
	}
	s.observe(t, ids[len(ids)-1])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gapless && from <= s.settled {
		for _, id := range ids {
			if id > s.settled+1 {
				break
			}
			s.settled = max(s.settled, id)
		}
	}
	return s.settled
}

// Check reports whether a read that began once Settled returned before may pass upTo: every
// id in (base, upTo] is settled, base being before, or the read's own cursor when that is
// higher (a cursor the service handed out was settled then). It settles what it can at once:
// under the gapless rule from page, the ids of an unfiltered page (all those in (base, upTo]),
// or else from the ids read here when they are few, each of which the caller's read must have
// returned when listed says so (nil: none); otherwise the time rule gets the newest id, and a
// read again after Pause finds it settled.
func (s *Settler) Check(ctx context.Context, base, upTo int64, page []int64, listed func(id int64, status sql.NullString) bool) (bool, error) {
	if upTo <= base {
		return true, nil
	}
	if s.gapless && (page != nil || upTo-base <= settleBatch) {
		ok, err := s.gaplessCheck(ctx, base, upTo, page, listed)
		if err != nil || ok {
			return ok, err
		}
	}
	// A hole, or too many ids to read (a page far above the ids settled so far, after a
	// start), or a Galera cluster: the time rule, from the newest pet, so that one delay
	// settles every hole there is now.
	newest, err := s.newest(ctx)
	if err != nil {
		return false, err
	}
	s.observe(time.Now(), max(newest, upTo))
	return false, nil
}

// gaplessCheck is Check under the gapless rule, when it can read the ids.
func (s *Settler) gaplessCheck(ctx context.Context, base, upTo int64, page []int64, listed func(id int64, status sql.NullString) bool) (bool, error) {
	if page != nil {
		s.found(time.Now(), base, page)
		return gapless(base, upTo, page), nil
	}
	ids, statuses, err := s.ids(ctx, base, upTo)
	if err != nil {
		return false, err
	}
	s.found(time.Now(), base, ids)
	for i, id := range ids {
		if listed != nil && !listed(id, statuses[i]) {
			return false, nil // it committed after the caller's read: read again
		}
	}
	return gapless(base, upTo, ids), nil
}

// gapless reports whether ids (ascending, from a locking read) hold every id in (base, upTo].
func gapless(base, upTo int64, ids []int64) bool {
	next := base + 1
	for _, id := range ids {
		if id == next {
			next++
		}
	}
	return next > upTo
}

// Advance settles what it can of the ids above the settled one, up to settleBatch of them at
// a time, and returns the settled id.
func (s *Settler) Advance(ctx context.Context) (int64, error) {
	for {
		settled := s.Settled()
		ids, _, err := s.ids(ctx, settled, 1<<63-1)
		if err != nil {
			return settled, err
		}
		now := s.found(time.Now(), settled, ids)
		if len(ids) < settleBatch || now == settled {
			return now, nil
		}
	}
}

// Pause waits before a page that Check could not settle is read again: under the gapless rule
// briefly, growing with attempt (a missing id is usually an insert about to enter the table),
// until the delay has passed under the time rule; or until ctx is done.
func (s *Settler) Pause(ctx context.Context, attempt int) error {
	d := s.delay
	if s.gapless {
		d = min(time.Millisecond<<min(attempt, 7), s.delay/8)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ids returns the ids in (from, upTo] and their statuses, at most settleBatch of them,
// waiting for uncommitted ones.
func (s *Settler) ids(ctx context.Context, from, upTo int64) ([]int64, []sql.NullString, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var (
		ids      []int64
		statuses []sql.NullString
	)
	err := Retry(ctx, func(ctx context.Context) error {
		ids, statuses = ids[:0], statuses[:0]
		rows, err := s.db.QueryContext(ctx, s.idsSQL, from, upTo)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id int64
				st sql.NullString
			)
			if err := rows.Scan(&id, &st); err != nil {
				return err
			}
			ids, statuses = append(ids, id), append(statuses, st)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, APIError(err)
	}
	return ids, statuses, nil
}

// newest returns the highest pet id committed on the node.
func (s *Settler) newest(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var id sql.NullInt64
	if err := s.db.QueryRowContext(ctx, s.maxSQL).Scan(&id); err != nil {
		return 0, APIError(err)
	}
	return id.Int64, nil
}
