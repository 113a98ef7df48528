package live

import (
	"context"
	"testing"
	"time"

	"petstore/apierr"
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
	t.Cleanup(hub.Close)
	c := &fakeConn{admit: 2}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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
	ended := c.ended()
	if n != 4+2*readPage || c.charges.Load() != 3 || ended == nil || ended.Code != apierr.RateLimited || c.cutCode() != 0 {
		t.Fatalf("%d pets, %d charges, then %v (cut %d); want %d pets, 3 charges (the last refused), then rate_limited, not cut off",
			n, c.charges.Load(), ended, c.cutCode(), 4+2*readPage)
	}
}
