package live

import (
	"context"
	"sync"
	"testing"
	"time"

	"petstore/models"
)

// petTable is a table of pets for a Hub to read: Read pages through it as pets.Store.After does.
type petTable struct {
	mu   sync.Mutex
	pets []models.Pet
}

// add appends n pets of status (nil: none) and returns the id of the last.
func (t *petTable) add(n int, status *models.PetStatus) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	for range n {
		t.pets = append(t.pets, models.Pet{ID: int64(len(t.pets) + 1), Status: status})
	}
	return int64(len(t.pets))
}

func (t *petTable) read(_ context.Context, afterID int64, n int, status *models.PetStatus) ([]models.Pet, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var page []models.Pet
	for _, p := range t.pets[min(int(afterID), len(t.pets)):] {
		if status != nil && (p.Status == nil || *p.Status != *status) {
			continue
		}
		if len(page) == n {
			return page, true, nil
		}
		page = append(page, p)
	}
	return page, false, nil
}

func (t *petTable) lastID(context.Context) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(len(t.pets)), nil
}

// newTestHub returns a Hub over t, closed with the test.
func newTestHub(t *testing.T, table *petTable, buffer int) *Hub {
	hub := NewHub(HubOptions{Read: table.read, LastID: table.lastID, Buffer: buffer, PollEvery: time.Hour})
	t.Cleanup(hub.Close)
	return hub
}

// receive returns the ids of the next n events of ch, failing the test past a few seconds.
func receive(t *testing.T, ch <-chan *Event, n int) []int64 {
	t.Helper()
	ids := make([]int64, 0, n)
	timeout := time.After(5 * time.Second)
	for len(ids) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %v; want %d events", ids, n)
			}
			if ev.Cursor != models.EncodeCursor(ev.Pet.ID) {
				t.Fatalf("event of pet %d with cursor %q", ev.Pet.ID, ev.Cursor)
			}
			ids = append(ids, ev.Pet.ID)
		case <-timeout:
			t.Fatalf("got %v; want %d events", ids, n)
		}
	}
	return ids
}

// wantRun fails the test unless ids are from, from+1, ... in order.
func wantRun(t *testing.T, ids []int64, from int64) {
	t.Helper()
	for i, id := range ids {
		if id != from+int64(i) {
			t.Fatalf("got %v; want each id from %d in order, none skipped or twice", ids, from)
		}
	}
}

// TestHubFanOutInOrder: every subscriber gets every pet added after it joined, once, in id
// order, whatever the wake-ups; a subscriber of a status gets only the pets of that status;
// nobody gets a pet stored before it joined.
func TestHubFanOutInOrder(t *testing.T) {
	table := &petTable{}
	table.add(5, nil) // before anyone joined
	hub := newTestHub(t, table, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := hub.Subscribe(ctx, nil, nil, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := hub.Subscribe(ctx, nil, nil, 0, false)
	sold := models.PetStatusSold
	onlySold, _ := hub.Subscribe(ctx, nil, &sold, 0, false)
	if hub.Active() != 3 {
		t.Fatalf("Active %d; want 3", hub.Active())
	}
	for range 10 {
		hub.Publish(table.add(2, nil))
		hub.Publish(table.add(1, &sold))
	}
	wantRun(t, receive(t, a, 30), 6)
	wantRun(t, receive(t, b, 30), 6)
	for i, id := range receive(t, onlySold, 10) {
		if id != int64(8+3*i) {
			t.Fatalf("sold subscriber got pet %d as its event %d; want %d", id, i, 8+3*i)
		}
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for hub.Active() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if hub.Active() != 0 {
		t.Fatalf("Active %d after every subscriber left; want 0", hub.Active())
	}
}

// TestHubResumeFromCursor: a subscription that resumes after an id gets every pet above it
// from the database, then the pets added meanwhile, in order, none twice; one that does not
// resume gets only the new ones.
func TestHubResumeFromCursor(t *testing.T) {
	table := &petTable{}
	table.add(250, nil) // more than a page
	hub := newTestHub(t, table, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resumed, err := hub.Subscribe(ctx, nil, nil, 40, true)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := hub.Subscribe(ctx, nil, nil, 0, false)
	for range 5 {
		hub.Publish(table.add(3, nil))
	}
	wantRun(t, receive(t, resumed, 250-40+15), 41)
	wantRun(t, receive(t, fresh, 15), 251)
}

// TestHubCutsOffSlowSubscriber: a subscriber that leaves its buffer full for SlowAfter is cut
// off as too slow (CloseSlow, ReasonSlow), its channel closed, and leaves the Hub.
func TestHubCutsOffSlowSubscriber(t *testing.T) {
	table := &petTable{}
	hub := NewHub(HubOptions{Read: table.read, LastID: table.lastID, Buffer: 2, SlowAfter: 50 * time.Millisecond})
	t.Cleanup(hub.Close)
	c := &fakeConn{admit: 1000} // its pages are paid for
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := hub.Subscribe(ctx, c, nil, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	hub.Publish(table.add(10, nil))
	deadline := time.Now().Add(5 * time.Second)
	for c.cutCode() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if code, reason := c.cut(); code != CloseSlow || reason != ReasonSlow {
		t.Fatalf("cut off with %d %q; want %d %q", code, reason, CloseSlow, ReasonSlow)
	}
	n := 0
	for range ch { // closed once cut off
		n++
	}
	if n > 2+readPage {
		t.Fatalf("%d events held for a subscriber that read nothing; want its buffer and a page at most", n)
	}
	if hub.Active() != 0 {
		t.Fatalf("Active %d; want the slow subscriber gone", hub.Active())
	}
}

// TestHubClosedRefuses: once closed, a Hub refuses new subscriptions as shutting down.
func TestHubClosedRefuses(t *testing.T) {
	hub := newTestHub(t, &petTable{}, 0)
	hub.Close()
	if _, err := hub.Subscribe(context.Background(), nil, nil, 0, false); err != ErrShuttingDown {
		t.Fatalf("Subscribe on a closed Hub: %v; want ErrShuttingDown", err)
	}
}

// TestRetryable: a client may reconnect after 1001 and 1013 only.
func TestRetryable(t *testing.T) {
	for _, code := range []int{CloseGoingAway, CloseRetry} {
		if !Retryable(code) {
			t.Errorf("Retryable(%d) false; want true", code)
		}
	}
	for _, code := range []int{CloseSlow, CloseBadRequest, CloseForbidden, CloseInitTimeout, CloseDuplicateID, CloseTooMany, 1000} {
		if Retryable(code) {
			t.Errorf("Retryable(%d) true; want false", code)
		}
	}
}
