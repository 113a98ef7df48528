package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"
)

// found notes that a read that began at m found exactly ids (ascending, committed) among the
// ids above from up to the last of them, and observes the last. Under the gapless rule it
// settles the ids that follow the settled one without a hole, the dead holes aside: those up to
// m.dead, which a locking read of them now (waiting for any row still uncommitted) does not
// find. When it finds one, m.dead is not to be trusted for ids: it returns errFilled, and the
// caller reads again.
func (s *Settler) found(ctx context.Context, m Mark, t time.Time, from int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	s.observe(t, ids[len(ids)-1])
	if !s.gapless {
		return nil
	}
	if holes := holesUpTo(from, m.dead, ids); len(holes) > 0 {
		if filled, err := s.present(ctx, holes); err != nil || filled {
			return cmp.Or(err, errFilled)
		}
	}
	s.advance(m, from, ids)
	return nil
}

// advance settles, under the gapless rule, the ids that follow the settled one in ids (those a
// read that began at m found above from), the holes up to m.dead aside.
func (s *Settler) advance(m Mark, from int64, ids []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from <= s.settled {
		s.settled = max(s.settled, gaplessTo(s.settled, m.dead, ids))
	}
}

// errFilled means that a hole of a read was filled meanwhile: read again.
var errFilled = errors.New("store: a pet missing from a read has arrived since")

// holesUpTo returns the ids above from, up to the last of ids and to dead, that ids (ascending)
// lack.
func holesUpTo(from, dead int64, ids []int64) []int64 {
	var holes []int64
	next := from + 1
	for _, id := range ids {
		for ; next < id && next <= dead; next++ {
			holes = append(holes, next)
		}
		next = max(next, id+1)
	}
	return holes
}

// present reports whether any of ids is in the table, waiting for those still uncommitted
// (a locking read; one of these a hole, rarely).
func (s *Settler) present(ctx context.Context, ids []int64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	q := make([]byte, 0, len(s.head)+64+len(ids)*8)
	q = append(q, s.head...)
	q = append(q, "COUNT(*) FROM pets WHERE id IN ("...)
	for i, id := range ids {
		if i > 0 {
			q = append(q, ',')
		}
		q = strconv.AppendInt(q, id, 10)
	}
	q = append(q, ") LOCK IN SHARE MODE"...)
	var n int
	err := Retry(ctx, func(ctx context.Context) error { return s.db.QueryRowContext(ctx, string(q)).Scan(&n) })
	if err != nil {
		return false, APIError(err)
	}
	return n > 0, nil
}

// gaplessTo returns the highest id up to which ids (ascending, from a locking read of every
// id above base) hold every id above base, but holes up to dead.
func gaplessTo(base, dead int64, ids []int64) int64 {
	next := base + 1 // the lowest id not accounted for
	for _, id := range ids {
		if id < next {
			continue
		}
		if id-1 > dead && id > next { // a hole not dead: accounted for up to it
			return max(next-1, min(dead, id-1))
		}
		next = id + 1
	}
	return next - 1
}

// gaplessCheck is Check under the gapless rule, when it can read the ids.
func (s *Settler) gaplessCheck(ctx context.Context, m Mark, base, upTo int64, page []int64, listed func(id int64, status sql.NullString) bool) (bool, error) {
	ids := page
	if ids == nil {
		m = s.Mark() // the read below begins now
		var statuses []sql.NullString
		var err error
		if ids, statuses, err = s.ids(ctx, base, upTo); err != nil {
			return false, err
		}
		for i, id := range ids {
			if listed != nil && !listed(id, statuses[i]) {
				s.found(ctx, m, time.Now(), base, ids)
				return false, nil // it committed after the caller's read: read again
			}
		}
	}
	if err := s.found(ctx, m, time.Now(), base, ids); err != nil {
		return false, err
	}
	return gaplessTo(base, m.dead, ids) >= upTo, nil
}

// Advance settles what it can of the ids above the settled one, up to settleBatch of them at
// a time, and returns the settled id.
func (s *Settler) Advance(ctx context.Context) (int64, error) {
	for {
		m := s.Mark()
		ids, _, err := s.ids(ctx, m.Settled, 1<<63-1)
		if err == nil {
			err = s.found(ctx, m, time.Now(), m.Settled, ids)
		}
		now := s.Settled()
		if errors.Is(err, errFilled) {
			continue
		}
		if err != nil || len(ids) < settleBatch || now == m.Settled {
			return now, err
		}
	}
}
