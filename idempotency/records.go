package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	sqlite "github.com/glebarez/go-sqlite"
	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"petstore/store"
)

// States of a record.
const (
	stateInFlight = "in_flight"
	stateDone     = "done"
)

// record is one row of idempotency_keys.
type record struct {
	KeyID       int64     `gorm:"column:key_id;primaryKey;autoIncrement:false"`
	IdemKey     string    `gorm:"column:idem_key;primaryKey"`
	RequestHash string    `gorm:"column:request_hash"`
	State       string    `gorm:"column:state"`
	LeaseToken  string    `gorm:"column:lease_token"`
	Status      int       `gorm:"column:status"`
	Headers     string    `gorm:"column:headers"` // JSON object of the replayed headers
	Body        []byte    `gorm:"column:body"`
	CreatedAt   time.Time `gorm:"column:created_at;autoCreateTime:false"`
	ExpiresAt   time.Time `gorm:"column:expires_at"`
	LockedUntil time.Time `gorm:"column:locked_until"`
}

// TableName is the table of the records.
func (record) TableName() string { return "idempotency_keys" }

// scope identifies a request: its API key, its Idempotency-Key and its fingerprint; body is
// the request's body, for each run of the handler.
type scope struct {
	keyID int64
	key   string
	hash  string
	body  []byte
}

// claim is a scope this request holds the lease of, until it records an answer or releases.
type claim struct {
	scope
	token string
}

// answer is a final response: what a replay sends.
type answer struct {
	status  int
	headers map[string]string
	body    []byte
}

// now returns the clock's time in UTC, to the microsecond both dialects keep.
func (s *Records) now() time.Time {
	return s.cfg.Now().UTC().Truncate(time.Microsecond)
}

// stmt returns db bound to ctx and QueryTimeout, for one statement.
func (s *Records) stmt(ctx context.Context, db *gorm.DB) (*gorm.DB, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	return db.WithContext(ctx), cancel
}

// maxAttempts bounds the claim loop: a record that vanishes or is taken over between two
// statements makes acquire try again, a few times.
const maxAttempts = 4

// errContended means the record kept changing under acquire: another request is on it.
var errContended = errors.New("idempotency: the key kept changing under concurrent requests")

// acquire claims sc for this request, or returns the live record that stops it from doing
// so: done (replay it), in flight under a valid lease, or made by a different request.
func (s *Records) acquire(ctx context.Context, sc scope) (*claim, *record, error) {
	for range maxAttempts {
		cl := &claim{scope: sc, token: newToken()}
		now := s.now()
		err := s.insert(ctx, cl, now)
		if err == nil {
			return cl, nil, nil
		}
		if store.Retryable(err) {
			continue
		}
		if !duplicate(err) {
			return nil, nil, err
		}
		rec, err := s.find(ctx, sc)
		if errors.Is(err, gorm.ErrRecordNotFound) || store.Retryable(err) {
			continue // released or purged meanwhile: insert again
		}
		if err != nil {
			return nil, nil, err
		}
		if !claimable(rec, sc.hash, now) {
			return nil, rec, nil
		}
		ok, err := s.takeOver(ctx, cl, now)
		switch {
		case ok:
			return cl, nil, nil
		case err != nil && !store.Retryable(err):
			return nil, nil, err
		}
	}
	return nil, nil, errContended
}

// claimable reports whether a request with hash may take rec over at now: rec has expired,
// or it is the same request in flight whose lease ran out.
func claimable(rec *record, hash string, now time.Time) bool {
	if !now.Before(rec.ExpiresAt) {
		return true
	}
	return rec.RequestHash == hash && rec.State == stateInFlight && !now.Before(rec.LockedUntil)
}

// fresh returns the in_flight row of cl claimed at now.
func (s *Records) fresh(cl *claim, now time.Time) *record {
	return &record{
		KeyID: cl.keyID, IdemKey: cl.key, RequestHash: cl.hash, State: stateInFlight,
		LeaseToken: cl.token, Headers: "", Body: []byte{},
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.TTL), LockedUntil: now.Add(s.cfg.Lease),
	}
}

// insert commits the in_flight row of cl, so that every instance sees the key taken.
func (s *Records) insert(ctx context.Context, cl *claim, now time.Time) error {
	db, cancel := s.stmt(ctx, s.db)
	defer cancel()
	return db.Create(s.fresh(cl, now)).Error
}

// find returns the record of sc.
func (s *Records) find(ctx context.Context, sc scope) (*record, error) {
	db, cancel := s.stmt(ctx, s.db)
	defer cancel()
	var rec record
	err := db.Where("key_id = ? AND idem_key = ?", sc.keyID, sc.key).Take(&rec).Error
	return &rec, err
}

// takeOver replaces, in one statement, a record that expired or whose same request's lease
// ran out by the in_flight row of cl. It reports false when another request changed the
// record first.
func (s *Records) takeOver(ctx context.Context, cl *claim, now time.Time) (bool, error) {
	db, cancel := s.stmt(ctx, s.db)
	defer cancel()
	row := s.fresh(cl, now)
	res := db.Model(&record{}).
		Where("key_id = ? AND idem_key = ?", cl.keyID, cl.key).
		Where("expires_at <= ? OR (state = ? AND locked_until <= ? AND request_hash = ?)", now, stateInFlight, now, cl.hash).
		Updates(map[string]any{
			"request_hash": row.RequestHash, "state": row.State, "lease_token": row.LeaseToken,
			"status": 0, "headers": row.Headers, "body": row.Body,
			"created_at": row.CreatedAt, "expires_at": row.ExpiresAt, "locked_until": row.LockedUntil,
		})
	return res.RowsAffected == 1, res.Error
}

// errLeaseLost means another request took the claim over while this one ran.
var errLeaseLost = errors.New("idempotency: the lease ran out and another request took the key over")

// saveAnswer stores a as the answer of cl in tx, the transaction of the handler's writes. It
// returns errLeaseLost when cl no longer holds the key.
func (s *Records) saveAnswer(ctx context.Context, tx *gorm.DB, cl *claim, a answer) error {
	headers, err := json.Marshal(a.headers)
	if err != nil {
		return err
	}
	now := s.now()
	db, cancel := s.stmt(ctx, tx)
	defer cancel()
	res := db.Model(&record{}).
		Where("key_id = ? AND idem_key = ? AND lease_token = ? AND state = ?", cl.keyID, cl.key, cl.token, stateInFlight).
		Updates(map[string]any{
			"state": stateDone, "status": a.status, "headers": string(headers), "body": a.body,
			"expires_at": now.Add(s.cfg.TTL), "locked_until": now,
		})
	if res.Error == nil && res.RowsAffected != 1 {
		return errLeaseLost
	}
	return res.Error
}

// release deletes the in_flight row of cl, if cl still holds it, so that a retry runs again.
// A row that got recorded (a commit that reported failure yet happened) stays, to be replayed.
// It runs even when the request was cancelled. When the database does not answer, it keeps
// trying in the background, so that a short outage does not hold the key for the whole lease.
func (s *Records) release(ctx context.Context, cl *claim) {
	ctx = context.WithoutCancel(ctx)
	err := s.deleteClaim(ctx, cl)
	if err == nil {
		return
	}
	logRelease(ctx, cl, err)
	go s.retryRelease(ctx, cl)
}

// releaseRetryEvery is how often a failed release is tried again.
const releaseRetryEvery = time.Second

// retryRelease tries to release cl once every releaseRetryEvery until it succeeds or the lease
// has run out anyway (measured on the wall clock, whatever clock the Records run on).
func (s *Records) retryRelease(ctx context.Context, cl *claim) {
	deadline := time.Now().Add(s.cfg.Lease)
	for time.Now().Before(deadline) {
		time.Sleep(releaseRetryEvery)
		if s.deleteClaim(ctx, cl) == nil {
			return
		}
	}
}

// deleteClaim deletes the in_flight row of cl if cl still holds it.
func (s *Records) deleteClaim(ctx context.Context, cl *claim) error {
	db, cancel := s.stmt(ctx, s.db)
	defer cancel()
	return db.Where("key_id = ? AND idem_key = ? AND lease_token = ? AND state = ?", cl.keyID, cl.key, cl.token, stateInFlight).
		Delete(&record{}).Error
}

// replayed returns the recorded answer of rec.
func (rec *record) replayed() answer {
	a := answer{status: rec.Status, body: rec.Body}
	_ = json.Unmarshal([]byte(rec.Headers), &a.headers) // written by saveAnswer
	return a
}

// newToken returns a random lease token: 128 bits in hex.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// duplicate reports whether err says the row exists already, with or without GORM's error
// translation.
func duplicate(err error) bool {
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return true
	}
	var myErr *mysqldriver.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number == 1062
	}
	var liteErr *sqlite.Error
	return errors.As(err, &liteErr) && (liteErr.Code() == sqliteConstraintPrimaryKey || liteErr.Code() == sqliteConstraintUnique)
}

// SQLite extended result codes of a duplicate key.
const (
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)
