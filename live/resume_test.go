package live

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/auth"
	"petstore/models"
)

// TestOverflowPagesCharged: a subscriber whose buffer overflowed pages through the database,
// each page charged to its key from the first (no subscribe operation paid for it). With 2
// charges admitted it gets its buffer and 2 pages, then its stream ends with the refusal.
func TestOverflowPagesCharged(t *testing.T) {
	pets := make([]models.Pet, 1000)
	for i := range pets {
		pets[i] = models.Pet{ID: int64(i + 1)}
	}
	read := func(_ context.Context, afterID int64, n int, _ *models.PetStatus) ([]models.Pet, bool, error) {
		from := min(int(afterID), len(pets))
		to := min(from+n, len(pets))
		return pets[from:to], to < len(pets), nil
	}
	hub := NewHub(HubOptions{Read: read, LastID: func(context.Context) (int64, error) { return 0, nil }, Buffer: 4})
	var charges atomic.Int32
	reg := NewRegistry(hub, RegistryOptions{Charge: func(context.Context, *auth.Principal, int) error {
		if charges.Add(1) > 2 {
			return apierr.New(apierr.RateLimited, "rate limit of 2 requests per minute exceeded; retry after 9 seconds")
		}
		return nil
	}})
	t.Cleanup(reg.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := reg.open(ctx, &auth.Principal{KeyID: 1, Plan: auth.Business}, func(int, string) {}, true)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := hub.Subscribe(ctx, c, nil, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	hub.Publish(int64(len(pets)))
	time.Sleep(200 * time.Millisecond) // the buffer overflows
	var last int64
	n := 0
	for ev := range ch {
		if ev.Pet.ID != last+1 {
			t.Fatalf("pet %d after %d; want each in order", ev.Pet.ID, last)
		}
		last = ev.Pet.ID
		n++
	}
	ev, complete := c.endEvent()
	if n != 4+2*readPage || charges.Load() != 3 || !strings.Contains(string(ev), "RATE_LIMITED") || !complete {
		t.Fatalf("%d pets, %d charges, then %q (complete %v); want %d pets, 3 charges (the last refused), then RATE_LIMITED and complete",
			n, charges.Load(), ev, complete, 4+2*readPage)
	}
}
