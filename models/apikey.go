package models

import "time"

// APIKey is a stored API key: only the SHA-256 hash of the secret is kept.
type APIKey struct {
	ID        int64     `gorm:"primaryKey"`
	Name      string    // a label for people
	Hint      string    // the key's prefix and first characters, to recognise it in lists
	Hash      string    // hex SHA-256 of the whole key
	Plan      string    // free, pro, business or enterprise
	PerMinute *int64    // enterprise limit per minute; nil for the plan's
	PerDay    *int64    // enterprise limit per day; nil for the plan's
	CreatedAt time.Time // when the key was created (UTC)
	RevokedAt *time.Time
}
