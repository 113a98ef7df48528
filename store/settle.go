package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// SettleDelay is how long after a pet was seen committed an id below it may stay missing
// from the table before it is taken as never to come. See Settler.
const SettleDelay = time.Second

// settleBatch bounds the ids that one settling read locks and returns.
const settleBatch = 10_000

// Settler knows up to which pet id every pet is settled: committed, or never to be (its insert
// failed or rolled back). A cursor, a subscription's mark or a replica's page may pass a
// settled id and lose nothing: no pet with a lower id can appear later.
//
// AUTO_INCREMENT hands out an id before its row is in the table. A page is a locking read
// (store/pets), which waits for every uncommitted row it meets; but a row not in the index
// yet, whose insert took its id a moment before, cannot be waited for: while pet 98 is being
// inserted, pet 99 can commit and be listed, and a cursor past 99 would skip 98 for good. Two
// rules settle ids:
//
//   - Gapless: where one counter hands out every id in steps of one (one MySQL or MariaDB
//     primary, auto_increment_increment 1), a locking read that finds every id from the
//     settled one up to some id settles them at once: each was waited for, and none is
//     missing. This is the common case, and costs nothing more than the page's own read. An
//     id missing from such a read (a hole) is dead, and passed like a row found, once a read
//     that began SettleDelay or more after a higher id was seen committed still misses it:
//     an insert that took it has entered the table by then, or failed. A hole is either an
//     insert that failed or rolled back, or one a moment from entering the table.
//   - Time: on a Galera cluster every node has its own counter (auto_increment_increment, one
//     offset per node), holes are the rule, and an id is settled once a pet with a higher or
//     equal id was seen committed at least SettleDelay before: a write that took a lower id
//     commits, or fails, within it.
//
// So a page, a subscription or a replica passes an id it has not seen only when that id was
// missing SettleDelay after a higher one committed: on one primary, a write that takes longer
// than that between taking its id and entering the table can be skipped; on Galera, one that
// takes longer to commit. A Settler is safe for concurrent use.
type Settler struct {
	db      *sql.DB // the primary
	head    string  // of every statement: the statement timeout on the server
	idsSQL  string  // the ids and statuses in (?, ?]
	maxSQL  string  // the highest id
	timeout time.Duration
	delay   time.Duration
	gapless bool

	mu      sync.Mutex
	settled int64         // every id up to it is settled
	dead    int64         // gapless: an id up to it still missing is dead
	seen    []observation // ids seen committed, ascending, not yet past their delay
}

// observation is the highest id reads saw committed, and when the last of them ended; reads
// that ended within delay/8 of the first are merged into one observation.
type observation struct {
	first, at time.Time
	id        int64
}

// Mark is what a Settler knew when a read began: pass it to Check with the read's results.
type Mark struct {
	// Settled is the highest id settled: a locking read that begins then sees every pet up to
	// it.
	Settled int64
	dead    int64
}

// newSettler returns the Settler of the MySQL primary db, whose statements take at most
// timeout: gapless unless ids come in steps other than one (a Galera cluster).
func newSettler(db *sql.DB, timeout time.Duration, gapless bool) *Settler {
	head := fmt.Sprintf("/*M! SET STATEMENT max_statement_time=%.3f FOR*/ SELECT /*+ MAX_EXECUTION_TIME(%d) */ ",
		timeout.Seconds(), timeout.Milliseconds())
	return &Settler{db: db, timeout: timeout, delay: SettleDelay, gapless: gapless, head: head,
		idsSQL: head + fmt.Sprintf("id, status FROM pets WHERE id > ? AND id <= ? ORDER BY id LIMIT %d", settleBatch),
		maxSQL: head + "MAX(id) FROM pets"}
}

// Settled returns the highest id settled now: every pet up to it is committed, or never will
// be.
func (s *Settler) Settled() int64 { return s.Mark().Settled }

// Mark returns what s knows now; call it just before a read.
func (s *Settler) Mark() Mark { return s.markAt(time.Now()) }

// markAt returns what s knows at now: the observations past their delay settle their ids
// (time rule) or make the holes below them dead (gapless rule).
func (s *Settler) markAt(now time.Time) Mark {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for ; i < len(s.seen) && now.Sub(s.seen[i].at) >= s.delay; i++ {
		if s.gapless {
			s.dead = max(s.dead, s.seen[i].id)
		} else {
			s.settled = max(s.settled, s.seen[i].id)
		}
	}
	s.seen = append(s.seen[:0], s.seen[i:]...)
	return Mark{Settled: s.settled, dead: s.dead}
}

// observe notes that a read that ended at t saw id committed.
func (s *Settler) observe(t time.Time, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.seen)
	switch {
	case id <= s.settled || (n > 0 && id <= s.seen[n-1].id):
		// An earlier observation of a higher id does as much, sooner.
	case n > 0 && t.Sub(s.seen[n-1].first) < s.delay/8:
		// Merged into the last observation, made later: at most 9 or so are kept.
		s.seen[n-1].at, s.seen[n-1].id = t, id
	default:
		s.seen = append(s.seen, observation{first: t, at: t, id: id})
	}
}

// Check reports whether a read that began at m may pass upTo: every id in (base, upTo] is
// settled, base being m.Settled, or the read's own cursor when that is higher (a cursor the
// service handed out was settled then). It settles what it can at once: under the gapless
// rule from page, the ids of an unfiltered page (all those in (base, upTo]), or else from the
// ids read here, each of which the caller's read must have returned when listed says so (nil:
// none); when they are too many to read at once (far above the ids settled so far, after a
// start), it advances the settled id and has the caller read again. Otherwise it notes the
// newest pet, past whose delay a read again after Pause finds the holes dead (gapless rule) or
// the ids settled (time rule).
func (s *Settler) Check(ctx context.Context, m Mark, base, upTo int64, page []int64, listed func(id int64, status sql.NullString) bool) (bool, error) {
	if upTo <= base {
		return true, nil
	}
	if s.gapless {
		if page != nil || upTo-base <= settleBatch {
			ok, err := s.gaplessCheck(ctx, m, base, upTo, page, listed)
			if errors.Is(err, errFilled) {
				return false, nil // read again
			}
			if err != nil || ok {
				return ok, err
			}
		} else if settled, err := s.Advance(ctx); err != nil || settled >= upTo {
			return false, err // read again: settled now
		}
	}
	// A hole, or a Galera cluster: the newest pet, so that one delay does for every hole there
	// is now.
	newest, err := s.newest(ctx)
	if err != nil {
		return false, err
	}
	s.observe(time.Now(), max(newest, upTo))
	return false, nil
}

// Pause waits before a page that Check could not settle is read again: under the gapless rule
// briefly, growing with attempt (a hole is usually an insert about to enter the table), until
// the delay has passed under the time rule; or until ctx is done.
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

// ids returns the ids committed in (from, upTo] and their statuses, at most settleBatch of
// them: a plain read, which neither waits for nor blocks a write.
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
