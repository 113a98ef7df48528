package graph

import (
	"context"
	"sync"
	"time"
)

// GaleraSettle is how long, on a Galera cluster, a listing waits before it hands out a cursor
// past pets it saw a moment ago: a pet whose id is lower than theirs, being added through
// another node, has that long to commit and be listed. See settler.
const GaleraSettle = time.Second

// settler tells, on a Galera cluster, which ids a cursor may pass. Every node hands out its
// own ids (auto_increment_increment, one offset per node), and a node's locks, which a page's
// locking read waits on, are its own: while pet 98 is being added through node 2, pet 100 can
// commit through node 1 and be listed through node 3, whose page would otherwise hand out a
// cursor past 98 for good. A node's counter passes every id it applies, and an insert
// first applies every write committed before it began (galeraCreatePetSQL), so once pet 100
// has committed no insert begun after it takes a lower id; a write that took a lower id
// before that commits or fails within its own time. So an id is settled once a pet with a
// higher or equal id was seen committed at least delay ago: a page whose cursor is not
// settled reads the newest pet's id, waits delay and is read again (the read waits until the
// node has applied everything committed in the cluster before it: wsrep_sync_wait). The wait
// concerns only pages among the pets added in the last delay or so, and settles, for every
// page of the instance, every pet there was when it began. A write that spends longer than delay between
// taking its id and committing can still be skipped.
type settler struct {
	delay time.Duration

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

// observe notes that a read that ended at t saw id committed.
func (s *settler) observe(t time.Time, id int64) {
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

// settledAt returns the highest id settled at now: every id up to it is committed or never
// will be.
func (s *settler) settledAt(now time.Time) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for ; i < len(s.seen) && now.Sub(s.seen[i].at) >= s.delay; i++ {
		s.settled = max(s.settled, s.seen[i].id)
	}
	s.seen = append(s.seen[:0], s.seen[i:]...)
	return s.settled
}

// wait waits until the ids that a read ended at t saw are settled, or ctx is done.
func (s *settler) wait(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t.Add(s.delay)))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
