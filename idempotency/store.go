// Package idempotency makes POST /v1/pets safe to retry (IETF draft "The Idempotency-Key HTTP
// Header Field"), exactly once across every instance of the service, through the database.
//
// A request with an Idempotency-Key header first claims the record of its API key and
// Idempotency-Key (a committed in_flight row with a lease), then runs its handler inside one
// transaction, carried in the request context (store.WithTx), with the response buffered. A
// final answer below 500 is recorded in that same transaction, so that the handler's writes
// and the recorded answer commit together or not at all; only then is the answer sent. A 5xx,
// a panic or a failed commit stores nothing and drops the claim, so that a retry runs again.
//
// A repeat with the same key and the same request gets the recorded answer again, with
// Idempotent-Replayed: true; the same key with another request gets 422
// idempotency_key_reused; the same key while the first request holds its lease gets 409
// idempotency_key_in_use with Retry-After: 1. A claim whose lease ran out (its instance died)
// is taken over. Records are kept Config.TTL (24 hours) and purged by Records.Purge.
package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"petstore/store"

	"gorm.io/gorm"
)

// MinTTL is the shortest time the contract lets a record be kept.
const MinTTL = 24 * time.Hour

// Config tunes the Records. DefaultConfig gives the documented defaults.
type Config struct {
	// TTL is how long a recorded answer is replayed (at least MinTTL); afterwards the key
	// counts as new, and Purge deletes the record.
	TTL time.Duration
	// Lease is how long a claimed key stays in flight before another request may take it
	// over; it also bounds the handler's transaction. Make it longer than a request can run
	// (the server's write timeout): a request that outlives its lease and is taken over gets
	// its writes rolled back and answers 409, so that the key still runs once.
	Lease time.Duration
	// QueryTimeout bounds each statement the middleware runs on its own: a database that does
	// not answer in time gets 503.
	QueryTimeout time.Duration
	// PurgeBatch bounds the rows one DELETE of Purge removes, so that a purge never holds the
	// table (or SQLite's one connection) for long.
	PurgeBatch int
	// Now is the clock; nil means time.Now. Every time is computed here, not in the database.
	Now func() time.Time
}

// DefaultConfig returns the defaults: records kept 24 hours, a 2-minute lease (the server
// gives a request at most 40 seconds by default), 5-second statements, purges of 1000 rows,
// bodies of at most 1 MiB.
func DefaultConfig() Config {
	return Config{
		TTL:          MinTTL,
		Lease:        2 * time.Minute,
		QueryTimeout: store.DefaultTimeout,
		PurgeBatch:   1000,
	}
}

// Records keeps the idempotency records in the table idempotency_keys (migration 00003).
type Records struct {
	db      *gorm.DB
	cfg     Config
	dialect string
}

// New returns the Records keeping its records in db (MySQL/MariaDB or SQLite). It returns an
// error when cfg cannot work: a TTL under MinTTL or not above the lease, a non-positive
// duration or size, or another dialect.
func New(db *gorm.DB, cfg Config) (*Records, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dialect := db.Dialector.Name()
	if dialect != "mysql" && dialect != "sqlite" {
		return nil, fmt.Errorf("idempotency: unsupported database %q", dialect)
	}
	return &Records{db: unprepared(db), cfg: cfg, dialect: dialect}, nil
}

// unprepared returns a session of db that bypasses GORM's prepared-statement cache (when db
// has one), for the middleware's statements and the handler's transaction. The cache prepares
// a new statement under a lock that every other statement waits for: a transaction holding
// SQLite's one connection (or the last free MySQL connection) that prepares a statement can
// wait for a request that holds the lock while it waits for that very connection, until
// the timeouts answer 503.
func unprepared(db *gorm.DB) *gorm.DB {
	p, ok := db.Statement.ConnPool.(*gorm.PreparedStmtDB)
	if !ok {
		return db
	}
	u := db.Session(&gorm.Session{NewDB: true, Context: context.Background()}) // own Statement and Config
	u.Statement.ConnPool = p.ConnPool
	u.Config.ConnPool = p.ConnPool
	u.Config.PrepareStmt = false
	return u
}

// Validate reports the first setting of c that cannot work. New calls it; config calls it too,
// so that a bad setting stops the service before it changes anything.
func (c Config) Validate() error {
	switch {
	case c.TTL < MinTTL:
		return fmt.Errorf("idempotency: TTL must be at least %v; got %v", MinTTL, c.TTL)
	case c.Lease <= 0 || c.Lease >= c.TTL:
		return fmt.Errorf("idempotency: Lease must be positive and shorter than TTL; got %v", c.Lease)
	case c.QueryTimeout <= 0 || c.PurgeBatch <= 0:
		return errors.New("idempotency: QueryTimeout and PurgeBatch must be positive")
	}
	return nil
}
