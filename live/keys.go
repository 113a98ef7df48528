package live

import (
	"context"

	"gorm.io/gorm"

	"petstore/models"
)

// keyChunk bounds the ids of one statement of KeyCheck.
const keyChunk = 500

// KeyCheck returns the CheckFunc of the key table in db (a key revoked or gone is cut off)
// and of suspended, which reports whether the rate limiter suspended a key
// (ratelimit.Limiter.Suspended; nil: none is). It reads the primary, not the key cache, so that
// a revoked key loses its subscriptions within RegistryOptions.RecheckEvery.
func KeyCheck(db *gorm.DB, suspended func(ctx context.Context, id int64) (bool, error)) CheckFunc {
	return func(ctx context.Context, ids []int64) (map[int64]string, error) {
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
		bad := map[int64]string{}
		for _, id := range ids {
			if !valid[id] {
				bad[id] = "was revoked"
				continue
			}
			if suspended == nil {
				continue
			}
			s, err := suspended(ctx, id)
			if err != nil {
				return nil, err
			}
			if s {
				bad[id] = "is suspended for sending requests after being rate limited"
			}
		}
		return bad, nil
	}
}
