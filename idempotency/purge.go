package idempotency

import (
	"context"
	"log/slog"
	"time"

	"petstore/internal/dblock"
	"petstore/store"
)

// Purge deletes the expired records, at most Config.PurgeBatch rows per statement, until none
// is left or ctx is done, and returns how many it deleted. Lookups ignore expired records
// already; Purge only reclaims their space.
func (s *Records) Purge(ctx context.Context) (int64, error) {
	now := s.now()
	var total int64
	for ctx.Err() == nil {
		n, err := s.purgeBatch(ctx, now)
		total += n
		if err != nil || n < int64(s.cfg.PurgeBatch) {
			return total, err
		}
	}
	return total, ctx.Err()
}

// purgeBatch deletes up to PurgeBatch records that expired at now, oldest first. MySQL takes
// DELETE ... LIMIT; SQLite (built without that option) deletes by rowid from a bounded select.
func (s *Records) purgeBatch(ctx context.Context, now time.Time) (int64, error) {
	query := "DELETE FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?"
	if s.dialect == "sqlite" {
		query = "DELETE FROM idempotency_keys WHERE rowid IN " +
			"(SELECT rowid FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)"
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	// A batch rolled back as a deadlock, or on Galera as a certification failure against a
	// request that takes over an expired key through another node (1213), runs again: it only
	// deletes expired records.
	var n int64
	err := store.Retry(ctx, func(ctx context.Context) error {
		res := s.db.WithContext(ctx).Exec(query, now, s.cfg.PurgeBatch)
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

// DefaultPurgeEvery is how often RunPurger purges when given no positive period.
const DefaultPurgeEvery = 10 * time.Minute

// purgeLock names the MySQL lock under which one instance at a time purges.
const purgeLock = "petstore-purge"

// RunPurger purges expired records at once and then every period (DefaultPurgeEvery when
// every is not positive), until ctx is done. Failures are logged and retried next period. On
// MySQL one instance at a time purges: a round finds the purge lock (GET_LOCK) free or leaves
// the purge to the instance that holds it (on a Galera cluster a lease: dblock).
func (s *Records) RunPurger(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultPurgeEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, skipped, err := s.purgeAlone(ctx)
		switch {
		case skipped:
			slog.DebugContext(ctx, "idempotency: another instance is purging; skipped")
		case err != nil && ctx.Err() == nil:
			slog.WarnContext(ctx, "idempotency: purge failed", "deleted", n, "err", err)
		case n > 0:
			slog.InfoContext(ctx, "idempotency: expired records purged", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// purgeAlone runs Purge unless, on MySQL, another session holds the purge lock: then it
// returns at once with skipped set.
func (s *Records) purgeAlone(ctx context.Context) (n int64, skipped bool, err error) {
	if s.dialect != "mysql" {
		n, err = s.Purge(ctx)
		return n, false, err
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return 0, false, err
	}
	lock, err := dblock.Acquire(ctx, sqlDB, purgeLock, 0)
	if err != nil || lock == nil {
		return 0, lock == nil && err == nil, err
	}
	defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }()
	n, err = s.Purge(ctx)
	return n, false, err
}
