package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHookReceiverDrain checks that the receiver answers 204 to a delivery, and that drain
// returns only once it received as many deliveries as pets were created, some of them late.
func TestHookReceiverDrain(t *testing.T) {
	h, err := listenHooks()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	deliver := func() {
		resp, err := http.Post(h.url, "application/json", strings.NewReader(`{"type":"pet.created"}`))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("delivery: got %d; want 204", resp.StatusCode)
		}
	}
	deliver()
	const late = 100 * time.Millisecond
	go func() {
		time.Sleep(late)
		deliver()
		deliver()
	}()
	waited, err := h.drain(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.got.Load(); got != 3 || waited < late {
		t.Errorf("drain returned after %s with %d deliveries; want 3, after at least %s", waited, got, late)
	}
}
