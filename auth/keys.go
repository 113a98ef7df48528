package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"petstore/internal/dblock"
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

// devKeyLockWait bounds how long EnsureDevKey waits for another instance's EnsureDevKey.
const devKeyLockWait = 10 * time.Second

// EnsureDevKey creates a free-plan key named "development" when no key exists at all, and
// returns it; it returns "" when keys exist already. Of instances starting at once on one
// database, one creates it: the check and the insert are one statement, run on MySQL under a
// named lock (GET_LOCK) so that no isolation level lets two inserts through.
func EnsureDevKey(ctx context.Context, db *gorm.DB, prefix string) (string, error) {
	if db.Dialector.Name() == "mysql" {
		sqlDB, err := db.DB()
		if err != nil {
			return "", err
		}
		lock, err := dblock.Acquire(ctx, sqlDB, "petstore-devkey", devKeyLockWait)
		if err != nil {
			return "", err
		}
		if lock == nil {
			return "", fmt.Errorf("another instance held the development key's lock for %v", devKeyLockWait)
		}
		defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }()
	}
	key := NewKey(prefix)
	res := db.WithContext(ctx).Exec("INSERT INTO api_keys (name, hint, hash, plan, created_at) "+
		"SELECT ?, ?, ?, ?, ? FROM (SELECT 1) AS one WHERE NOT EXISTS (SELECT 1 FROM api_keys)",
		"development", Hint(key, prefix), Hash(key), Free.Name, time.Now().UTC())
	if res.Error != nil || res.RowsAffected == 0 {
		return "", res.Error
	}
	return key, nil
}
