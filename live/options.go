package live

import (
	"context"
	"time"

	"petstore/models"
)

// ReadFunc reads up to n pets after afterID in id order, only those of status when it is not
// nil, and reports whether more follow. It must never return a pet while a lower id may still
// commit (pets.Store.After).
type ReadFunc func(ctx context.Context, afterID int64, n int, status *models.PetStatus) ([]models.Pet, bool, error)

// Defaults of HubOptions.
const (
	DefaultBuffer    = 32
	DefaultPollEvery = 2 * time.Second
	readPage         = 100
)

// HubOptions are the settings of a Hub; zero fields take the defaults.
type HubOptions struct {
	// Read reads the pets (required).
	Read ReadFunc
	// LastID returns the highest pet id stored: the mark of a Hub that starts (required).
	LastID func(ctx context.Context) (int64, error)
	// Bus carries the wake-ups between instances; nil: this instance only.
	Bus Bus
	// Buffer is how many events a subscription may have unsent before it is cut off
	// (default DefaultBuffer).
	Buffer int
	// PollEvery is how often a Hub with subscribers reads the database without being woken
	// (default DefaultPollEvery): what bounds the delay of a pet whose wake-up was lost.
	PollEvery time.Duration
	// SlowAfter is how long a subscriber may leave its full buffer unread before it is cut off
	// (default 10 s).
	SlowAfter time.Duration
	// Metrics counts subscriptions and events; nil: counted but not exported.
	Metrics *Metrics
}

// withDefaults returns o with its zero fields set to the defaults.
func (o HubOptions) withDefaults() HubOptions {
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.PollEvery <= 0 {
		o.PollEvery = DefaultPollEvery
	}
	if o.SlowAfter <= 0 {
		o.SlowAfter = 10 * time.Second
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	return o
}
