package pets_test

import (
	"context"
	"testing"

	"petstore/store"
	"petstore/store/pets"
	"petstore/testkit/dbtest"
)

// TestLastIDWhenTheClientIsGone: a subscription whose client leaves while the Hub reads where
// to start gets an error from LastID, not a panic: a statement that cannot be prepared on a
// context already done is an error like any other.
func TestLastIDWhenTheClientIsGone(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := pets.New(db, store.DefaultTimeout, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		id, err := s.LastID(ctx)
		if err == nil {
			t.Fatalf("LastID on a done context: got %d; want an error", id)
		}
		if id, err := s.LastID(context.Background()); err != nil || id != 0 {
			t.Fatalf("LastID: got %d, %v; want 0 on an empty table", id, err)
		}
	})
}
