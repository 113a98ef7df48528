package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"petstore/models"
	"petstore/store"
)

// ErrKeyNotFound is returned by Revoke for an id that names no key.
var ErrKeyNotFound = errors.New("no API key with that id")

// KeySpec describes a key to create.
type KeySpec struct {
	Name      string
	Plan      string // free, pro, business or enterprise
	PerMinute int64  // enterprise only: requests per minute
	PerDay    int64  // enterprise only: requests per day
}

// planOf returns the plan of a spec or of a stored key.
func planOf(name string, perMinute, perDay int64) (Plan, error) {
	switch name {
	case Free.Name:
		return Free, nil
	case Pro.Name:
		return Pro, nil
	case Business.Name:
		return Business, nil
	case Enterprise:
		if perMinute < 1 || perDay < 1 {
			return Plan{}, errors.New("an enterprise key needs --per-minute and --per-day, each at least 1")
		}
		return Plan{Name: name, PerMinute: perMinute, PerDay: perDay}, nil
	}
	return Plan{}, fmt.Errorf("unknown plan %q: use one of %s", name, strings.Join(PlanNames, ", "))
}

// CreateKey stores a new key for spec and returns the key itself, which is not stored and
// cannot be shown again, with its record.
func CreateKey(ctx context.Context, db *gorm.DB, prefix string, spec KeySpec) (string, models.APIKey, error) {
	if spec.Plan != Enterprise && (spec.PerMinute != 0 || spec.PerDay != 0) {
		return "", models.APIKey{}, errors.New("--per-minute and --per-day are for enterprise keys; other plans have fixed limits")
	}
	if _, err := planOf(spec.Plan, spec.PerMinute, spec.PerDay); err != nil {
		return "", models.APIKey{}, err
	}
	key := NewKey(prefix)
	rec := models.APIKey{
		Name: spec.Name, Hint: Hint(key, prefix), Hash: Hash(key), Plan: spec.Plan,
		CreatedAt: time.Now().UTC(),
	}
	if spec.Plan == Enterprise {
		rec.PerMinute, rec.PerDay = &spec.PerMinute, &spec.PerDay
	}
	// The write runs again while the server rolls it back (store.Retry). A connection lost
	// under it may leave a key stored that nobody ever saw: harmless, since only its hash is.
	err := store.Retry(ctx, func(ctx context.Context) error { return db.WithContext(ctx).Create(&rec).Error })
	if err != nil {
		return "", models.APIKey{}, fmt.Errorf("store the key: %w", err)
	}
	return key, rec, nil
}

// ListKeys returns every key record, revoked ones included, by id.
func ListKeys(ctx context.Context, db *gorm.DB) ([]models.APIKey, error) {
	var keys []models.APIKey
	err := db.WithContext(ctx).Order("id").Find(&keys).Error
	return keys, err
}

// RevokeKey marks the key with id revoked; servers stop accepting it within their key cache's
// lifetime. Revoking a revoked key changes nothing. It returns ErrKeyNotFound for an unknown id.
func RevokeKey(ctx context.Context, db *gorm.DB, id int64) error {
	var rec models.APIKey
	if err := db.WithContext(ctx).Take(&rec, id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return ErrKeyNotFound
		}
		return err
	}
	if rec.RevokedAt != nil {
		return nil
	}
	return db.WithContext(ctx).Model(&rec).Update("revoked_at", time.Now().UTC()).Error
}

// devKeyID is the id of the development key: one id, so that two instances that both find
// no key cannot both store one. On a Galera cluster a named lock (GET_LOCK) holds on one node
// only, while two inserts of one primary key conflict cluster-wide (a certification failure,
// retried, or a duplicate key); on one server they are a duplicate key.
const devKeyID = 1

// EnsureDevKey creates a key of plan (free, pro or business) named "development" when no key
// exists at all, and returns it; it returns "" when keys exist already. Of instances starting
// at once on one database, one creates it: the check and the insert are one statement, and
// the key's id is always devKeyID, so that a second insert (from any node of a cluster, under
// any isolation level) fails as a duplicate and leaves the first key alone.
func EnsureDevKey(ctx context.Context, db *gorm.DB, prefix, plan string) (string, error) {
	if plan == Enterprise {
		return "", errors.New("the development key's plan must have fixed limits: free, pro or business")
	}
	if _, err := planOf(plan, 0, 0); err != nil {
		return "", err
	}
	key := NewKey(prefix)
	var stored int64
	err := store.Retry(ctx, func(ctx context.Context) error {
		res := db.WithContext(ctx).Exec("INSERT INTO api_keys (id, name, hint, hash, plan, created_at) "+
			"SELECT ?, ?, ?, ?, ?, ? FROM (SELECT 1) AS one WHERE NOT EXISTS (SELECT 1 FROM api_keys)",
			devKeyID, "development", Hint(key, prefix), Hash(key), plan, time.Now().UTC())
		stored = res.RowsAffected
		return res.Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) || stored == 0 {
		return "", nil // another instance made it
	}
	if err != nil {
		return "", err
	}
	return key, nil
}
