package conns

import (
	"context"

	"gorm.io/gorm"

	"petstore/apierr"
	"petstore/auth"
	"petstore/models"
)

// keyChunk bounds the ids of one statement of KeyCheck.
const keyChunk = 500

// suspendedFunc returns which keys of ids the rate limiter suspended.
type suspendedFunc func(ctx context.Context, ids []int64) (map[int64]bool, error)

// KeyCheck returns the CheckFunc of the key table in db (a key revoked or gone is cut off)
// and of suspended, which returns the keys of ids that the rate limiter suspended
// (ratelimit.Limiter.Suspended, asked once for all of them; nil: none is). It reads the primary,
// not the key cache, so that a revoked key loses its subscriptions within
// RegistryOptions.RecheckEvery.
func KeyCheck(db *gorm.DB, suspended func(ctx context.Context, ids []int64) (map[int64]bool, error)) CheckFunc {
	return func(ctx context.Context, ids []int64) (map[int64]string, error) {
		valid, err := validKeys(ctx, db, ids)
		if err != nil {
			return nil, err
		}
		bad := map[int64]string{}
		kept := make([]int64, 0, len(valid))
		for _, id := range ids {
			if valid[id] {
				kept = append(kept, id)
			} else {
				bad[id] = "was revoked"
			}
		}
		if err := addSuspended(ctx, suspended, kept, bad); err != nil {
			return nil, err
		}
		return bad, nil
	}
}

// validKeys returns which keys of ids exist and are not revoked, keyChunk to a statement.
func validKeys(ctx context.Context, db *gorm.DB, ids []int64) (map[int64]bool, error) {
	valid := make(map[int64]bool, len(ids))
	for start := 0; start < len(ids); start += keyChunk {
		var found []int64
		chunk := ids[start:min(start+keyChunk, len(ids))]
		err := db.WithContext(ctx).Model(&models.APIKey{}).Where("id IN ? AND revoked_at IS NULL", chunk).Pluck("id", &found).Error
		if err != nil {
			return nil, err
		}
		for _, id := range found {
			valid[id] = true
		}
	}
	return valid, nil
}

// addSuspended adds to bad the keys of ids that suspended names (none when it is nil).
func addSuspended(ctx context.Context, suspended suspendedFunc, ids []int64, bad map[int64]string) error {
	if suspended == nil || len(ids) == 0 {
		return nil
	}
	s, err := suspended(ctx, ids)
	if err != nil {
		return err
	}
	for id := range s {
		bad[id] = "is suspended for sending requests after being rate limited"
	}
	return nil
}

// CheckKey returns the error of p's key when RegistryOptions.Check finds it revoked or
// suspended (unauthorized), or cannot tell (unavailable); nil for a key that may connect.
func (r *Registry) CheckKey(ctx context.Context, p *auth.Principal) error {
	if r.opts.Check == nil {
		return nil
	}
	bad, err := r.opts.Check(ctx, []int64{p.KeyID})
	if err != nil {
		return &apierr.Error{Code: apierr.Unavailable, Message: "cannot check the API key now; retry later", Err: err}
	}
	if reason, ok := bad[p.KeyID]; ok {
		return apierr.New(apierr.Unauthorized, "the API key %s", reason)
	}
	return nil
}
