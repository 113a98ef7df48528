package ratelimit

import (
	"context"
	"sync"
	"time"
)

const (
	shardCount = 64           // a power of two; spreads lock contention over the cores
	sweepEvery = minuteMS * 5 // how often a shard drops expired subjects, in milliseconds
)

// MemoryCounters is the in-process Counters: the state of one instance, in shards of subjects each
// guarded by a mutex. A decision takes one shard lock and allocates nothing once the subject
// is known. Each shard drops expired subjects at most every five minutes, during a Take, so the
// memory used follows the number of subjects seen within about a day.
type MemoryCounters struct {
	now    func() time.Time
	shards [shardCount]shard
}

type shard struct {
	mu        sync.Mutex
	subjects  map[Subject]*entry
	lastSweep int64
	_         [32]byte // keeps neighbouring shards' locks off one cache line
}

type entry struct {
	state
	expires int64 // state.expiry at the last change
}

// NewMemoryCounters returns an in-process Counters reading time from clock (time.Now when nil);
// tests pass a fake clock.
func NewMemoryCounters(clock func() time.Time) *MemoryCounters {
	if clock == nil {
		clock = time.Now
	}
	s := &MemoryCounters{now: clock}
	for i := range s.shards {
		s.shards[i].subjects = make(map[Subject]*entry)
	}
	return s
}

// Take implements Counters. It never fails.
func (s *MemoryCounters) Take(_ context.Context, subj Subject, p Policy, n int64) (Decision, error) {
	return s.decide(subj, p, rulesOf(p, n)), nil
}

// Check implements Counters. It never fails.
func (s *MemoryCounters) Check(_ context.Context, subj Subject, p Policy) (Decision, error) {
	return s.decide(subj, p, checkRulesOf(p)), nil
}

// decide decides one request of subj under r, the rules of p.
func (s *MemoryCounters) decide(subj Subject, p Policy, r rules) Decision {
	now := s.now().UnixMilli()
	sh := &s.shards[subj.hash()&(shardCount-1)]
	sh.mu.Lock()
	res := sh.take(subj, now, r)
	sh.mu.Unlock()
	return decision(p, res)
}

// take decides under the shard's lock. Only a subject's first request allocates.
func (sh *shard) take(subj Subject, now int64, r rules) raw {
	e := sh.subjects[subj]
	if e == nil {
		e = new(entry)
		sh.subjects[subj] = e
	}
	res, changed := e.take(now, r)
	if changed {
		e.expires = e.expiry(r)
	}
	if now-sh.lastSweep >= sweepEvery {
		sh.sweep(now)
	}
	return res
}

// sweep drops the subjects whose state no longer matters.
func (sh *shard) sweep(now int64) {
	sh.lastSweep = now
	for subj, e := range sh.subjects {
		if e.expires <= now {
			delete(sh.subjects, subj)
		}
	}
}

// len returns the number of subjects held (for tests).
func (s *MemoryCounters) len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.subjects)
		sh.mu.Unlock()
	}
	return n
}
