package live

import (
	"context"
	"errors"
	"testing"

	"petstore/models"
)

// TestRelayOneEventAtATime: under a Relay, Subscribe returns the Relay's channel, which holds
// at most one event: Wait moves the next one once the last was taken, and closes it when the
// subscription ends. A second subscription under the same Relay is not relayed.
func TestRelayOneEventAtATime(t *testing.T) {
	table := &petTable{}
	hub := newTestHub(t, table, 8)
	ctx, cancel := context.WithCancel(context.Background())
	rctx, relay := WithRelay(ctx)
	out, err := hub.Subscribe(rctx, nil, nil, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if second, _ := hub.Subscribe(rctx, nil, nil, 0, false); second == out {
		t.Fatal("a second subscription under the Relay got the Relay's channel")
	}
	hub.Publish(table.add(3, nil))
	for want := int64(1); want <= 3; want++ {
		relay.Wait(ctx)
		relay.Wait(ctx) // the last not taken yet: returns at once
		if len(out) != 1 {
			t.Fatalf("%d events in the Relay's channel; want 1", len(out))
		}
		if ev := <-out; ev.Pet.ID != want {
			t.Fatalf("pet %d; want %d", ev.Pet.ID, want)
		}
	}
	cancel()
}

// TestRelayEnds: the Relay's channel closes once the subscription's does: here a resume whose
// read fails, which cuts the subscriber off.
func TestRelayEnds(t *testing.T) {
	failing := func(context.Context, int64, int, *models.PetStatus) ([]models.Pet, bool, error) {
		return nil, false, errors.New("the database is down")
	}
	hub := NewHub(HubOptions{Read: failing, LastID: (&petTable{}).lastID})
	t.Cleanup(hub.Close)
	c := &fakeConn{}
	ctx, relay := WithRelay(context.Background())
	out, err := hub.Subscribe(ctx, c, nil, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	relay.Wait(context.Background())
	if _, ok := <-out; ok {
		t.Fatal("an event from a subscription whose read failed")
	}
	if code := c.cutCode(); code != CloseRetry {
		t.Fatalf("cut off with %d; want %d", code, CloseRetry)
	}
}
