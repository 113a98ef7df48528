package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"gorm.io/gorm"

	"petstore/apierr"
	"petstore/models"
	"petstore/store"
)

// DefaultCacheTTL bounds how long a server keeps trusting a cached key lookup: a revoked key
// stops working within this time.
const DefaultCacheTTL = 10 * time.Second

// StaleIfError is how long past its expiry a cached lookup still answers while the key table
// cannot be read (stale-if-error): a key found valid within it keeps its principal through an
// outage, so that it is charged to its own budget and never to its client address, and a key
// found unknown keeps its 401. Its price: while the database does not answer, a key revoked
// up to DefaultCacheTTL before the outage began stays accepted for at most this long (its
// requests still need the database to do anything). Nothing can be revoked during the
// outage itself: revoking writes the key table.
const StaleIfError = 5 * time.Minute

// maxUnknownEntries bounds the cache of unknown and revoked keys, so that guessed keys cannot
// grow it without limit. Valid keys are cached apart, never evicted by guesses: there are only
// as many as the key table holds.
const maxUnknownEntries = 100_000

// Authenticator checks bearer keys: well-formedness without a database read, then a lookup of
// the key's hash, cached for a bounded time so that a warm request reads no key table.
type Authenticator struct {
	db           *gorm.DB
	replicas     *store.Replicas // nil: every lookup reads the primary
	prefix       string
	ttl          time.Duration
	queryTimeout time.Duration
	now          func() time.Time

	mu         sync.RWMutex
	valid      map[string]cacheEntry // keys valid at their last lookup, by key hash
	unknown    map[string]cacheEntry // keys unknown or revoked at their last lookup, by key hash
	maxUnknown int                   // bound of unknown: maxUnknownEntries
	flight     singleflight.Group
	stale      time.Duration // StaleIfError
	downUntil  atomic.Int64  // Unix nanoseconds before which the key table is not read: a read failed
	// suspect is set by a failed read of the key table and cleared by one that succeeds; while
	// it is set, past downUntil, one read at a time probes the table (probing) and the other
	// lookups answer as within downUntil, so that an outage costs one read a second however
	// many keys arrive together.
	suspect atomic.Bool
	probing atomic.Bool
	list    keyList // the set of valid keys (keyset.go)
}

type cacheEntry struct {
	principal *Principal // nil: no such key, or revoked
	expires   time.Time
}

// NewAuthenticator returns an Authenticator for the keys with prefix stored in db, caching
// each lookup for ttl (DefaultCacheTTL when ttl is zero or negative) and giving each read of
// the key table at most queryTimeout (store.DefaultTimeout when zero or negative). replicas,
// when not nil, serve the lookups that find a valid key on a fresh replica; a key unknown or
// revoked there is read again on the primary, so that a key created a moment ago is not cached
// as unknown.
func NewAuthenticator(db *gorm.DB, replicas *store.Replicas, prefix string, ttl, queryTimeout time.Duration) *Authenticator {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	if queryTimeout <= 0 {
		queryTimeout = store.DefaultTimeout
	}
	a := &Authenticator{db: db, replicas: replicas, prefix: prefix, ttl: ttl, queryTimeout: queryTimeout, now: time.Now,
		valid: map[string]cacheEntry{}, unknown: map[string]cacheEntry{}, maxUnknown: maxUnknownEntries,
		stale: StaleIfError}
	a.list.init()
	return a
}

// Authenticate returns the principal of an Authorization header value. It returns an
// unauthorized *apierr.Error for a missing, malformed, unknown or revoked key (the last three
// alike), and an unavailable one when the key table cannot be read.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (*Principal, error) {
	hash, p, err := a.cached(header)
	if hash == "" {
		return p, err
	}
	return a.lookup(ctx, hash)
}

// Resolve is Authenticate for a request outside the HTTP chain (a WebSocket's
// connection_init), with the chain's guard: beforeRead, when not nil, is called with the key's
// hash before the key table is read for a key this server has neither found valid nor listed
// (a possible guess), and its error is returned instead of reading. Identify, Gate and Lookup
// do the same for an HTTP request.
func (a *Authenticator) Resolve(ctx context.Context, header string, beforeRead func(ctx context.Context, hash string) error) (*Principal, error) {
	hash, p, err := a.cached(header)
	if hash == "" {
		return p, err
	}
	if beforeRead != nil && !a.knownValid(hash) && !a.listed(hash) {
		if err := beforeRead(ctx, hash); err != nil {
			return nil, err
		}
	}
	return a.lookup(ctx, hash)
}

// cached settles header without a database read when it can: it returns the principal, or the
// error, of a missing or malformed key or of one whose lookup is cached. For a well-formed key
// whose lookup is not cached, it returns the key's hash instead, for lookup.
func (a *Authenticator) cached(header string) (hash string, p *Principal, err error) {
	key, err := bearerKey(header)
	if err != nil {
		return "", nil, err
	}
	if !WellFormed(key, a.prefix) {
		return "", nil, errInvalidKey
	}
	text := hashText(key) // a string only when the lookup is not cached
	a.mu.RLock()
	e, ok := a.valid[string(text[:])]
	if !ok {
		e, ok = a.unknown[string(text[:])]
	}
	a.mu.RUnlock()
	if !ok || a.now().After(e.expires) {
		return string(text[:]), nil, nil
	}
	p, err = e.answer()
	return "", p, err
}

// knownValid reports whether the key with hash was valid at its last lookup, now expired: not a
// guess, since only a holder of a valid key can send it.
func (a *Authenticator) knownValid(hash string) bool {
	a.mu.RLock()
	_, ok := a.valid[hash]
	a.mu.RUnlock()
	return ok
}

// lookup reads the key with hash from the key table, once for every caller waiting on it, and
// caches the answer. When the table cannot be read (or could not within the last downFor),
// a lookup cached less than StaleIfError ago answers instead; else the key is unchecked: an
// unavailable error (Unchecked).
func (a *Authenticator) lookup(ctx context.Context, hash string) (*Principal, error) {
	now := a.now()
	err := errDown
	if probe, ok := a.mayRead(now); ok {
		var v any
		v, err, _ = a.flight.Do(hash, func() (any, error) {
			// Shared by every caller waiting on this key: not cancelled with the first one.
			// Each read of the table has its own timeout (take).
			return a.load(context.WithoutCancel(ctx), hash, now)
		})
		a.suspect.Store(err != nil)
		if probe {
			a.probing.Store(false)
		}
		if err == nil {
			return v.(cacheEntry).answer()
		}
		a.downUntil.Store(now.Add(downFor).UnixNano())
	}
	if e, ok := a.staleEntry(hash, now); ok {
		return e.answer()
	}
	return nil, &apierr.Error{Code: apierr.Unavailable, Message: "cannot check the API key now; retry later", Err: err}
}

// answer returns the principal of e, or the error of an unknown or revoked key.
func (e cacheEntry) answer() (*Principal, error) {
	if e.principal == nil {
		return nil, errInvalidKey
	}
	return e.principal, nil
}

// load reads the key with hash from the database and caches the answer.
func (a *Authenticator) load(ctx context.Context, hash string, now time.Time) (cacheEntry, error) {
	rec, err := a.read(ctx, hash)
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return cacheEntry{}, err
	}
	e := cacheEntry{expires: now.Add(a.ttl)}
	if err == nil && rec.RevokedAt == nil {
		e.principal = principalOf(rec)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.principal != nil {
		a.valid[hash] = e
		delete(a.unknown, hash)
		return e, nil
	}
	delete(a.valid, hash)
	if len(a.unknown) >= a.maxUnknown {
		a.evictUnknown(now)
	}
	a.unknown[hash] = e
	return e, nil
}

// read returns the record of the key with hash: from a fresh replica when it has the key
// unrevoked, else from the primary. Each read takes at most a.queryTimeout.
func (a *Authenticator) read(ctx context.Context, hash string) (models.APIKey, error) {
	if rd, ok := a.replicas.Pick(); ok {
		rctx, cancel := rd.Context(ctx)
		rec, err := a.take(rctx, rd.DB, hash)
		cancel()
		served := err == nil && rec.RevokedAt == nil
		a.replicas.Release(rd, served, err)
		if served {
			return rec, nil
		}
	}
	return a.take(ctx, a.db, hash)
}

// take reads the record of the key with hash on db.
func (a *Authenticator) take(ctx context.Context, db *gorm.DB, hash string) (models.APIKey, error) {
	ctx, cancel := context.WithTimeout(ctx, a.queryTimeout)
	defer cancel()
	var rec models.APIKey
	err := db.WithContext(ctx).Where("hash = ?", hash).Take(&rec).Error
	return rec, err
}

// evictUnknown drops the expired entries of unknown keys, or all of them when more than half
// are still live, so that the next eviction is at least half the bound of inserts away; a.mu
// is held. Valid keys are not touched: a flood of guesses costs their holders nothing.
func (a *Authenticator) evictUnknown(now time.Time) {
	for h, e := range a.unknown {
		if now.After(e.expires) {
			delete(a.unknown, h)
		}
	}
	if len(a.unknown) > a.maxUnknown/2 {
		clear(a.unknown)
	}
}

// principalOf returns the principal of a stored, unrevoked key.
func principalOf(rec models.APIKey) *Principal {
	var perMinute, perDay int64
	if rec.PerMinute != nil && rec.PerDay != nil {
		perMinute, perDay = *rec.PerMinute, *rec.PerDay
	}
	plan, err := planOf(rec.Plan, perMinute, perDay)
	if err != nil {
		return nil // a record no command could have written: treat the key as unknown
	}
	return &Principal{KeyID: rec.ID, Plan: plan}
}

var (
	errMissingKey = &apierr.Error{Code: apierr.Unauthorized, Message: "missing API key: send the header Authorization: Bearer <API key>"}
	errScheme     = &apierr.Error{Code: apierr.Unauthorized, Message: "the Authorization header must use the Bearer scheme: Authorization: Bearer <API key>"}
	errInvalidKey = &apierr.Error{Code: apierr.Unauthorized, Message: "invalid API key"}
)

// bearerKey returns the key of an Authorization header value; the scheme is case-insensitive.
func bearerKey(header string) (string, error) {
	if strings.TrimSpace(header) == "" {
		return "", errMissingKey
	}
	scheme, key, _ := strings.Cut(strings.TrimSpace(header), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", errScheme
	}
	return strings.TrimSpace(key), nil
}

// Challenge returns the WWW-Authenticate value for a 401 answer to err: invalid_token when a
// bearer key was sent.
func Challenge(err error) string {
	if errors.Is(err, errInvalidKey) {
		return `Bearer realm="petstore", error="invalid_token"`
	}
	return `Bearer realm="petstore"`
}
