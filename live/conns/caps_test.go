package conns

import (
	"context"
	"sync"
	"testing"

	"petstore/apierr"
	"petstore/auth"
	"petstore/live"
)

// newTestRegistry returns a Registry without Redis, shut down with the test.
func newTestRegistry(t *testing.T, opts RegistryOptions) *Registry {
	reg := NewRegistry(live.NewHub(live.HubOptions{}), opts)
	t.Cleanup(reg.Shutdown)
	return reg
}

// cuts records how connections were cut off.
type cuts struct {
	mu    sync.Mutex
	codes []int
}

func (c *cuts) cut(code int, _ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.codes = append(c.codes, code)
}

func (c *cuts) list() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.codes...)
}

// TestCapsPerKey: a key holds at most its plan's cap of connections and of subscriptions on
// the instance (free: 2); past it, rate_limited; a slot closed or ended is free again, and
// another key is not affected.
func TestCapsPerKey(t *testing.T) {
	reg := newTestRegistry(t, RegistryOptions{})
	free := &auth.Principal{KeyID: 1, Plan: auth.Free}
	ctx := context.Background()
	ws, err := reg.Open(ctx, free, func(int, string) {}, false)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := reg.Open(ctx, free, func(int, string) {}, true) // a connection and a subscription
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Open(ctx, free, func(int, string) {}, false); apierr.From(err).Code != apierr.RateLimited {
		t.Fatalf("third connection of a free key: %v; want rate_limited", err)
	}
	if _, err := reg.Open(ctx, &auth.Principal{KeyID: 2, Plan: auth.Free}, func(int, string) {}, false); err != nil {
		t.Fatalf("another key: %v; want it admitted", err)
	}

	subCtx, endSub := context.WithCancel(ctx)
	if err := ws.Acquire(subCtx); err != nil {
		t.Fatalf("second subscription: %v", err)
	}
	if err := ws.Acquire(ctx); apierr.From(err).Code != apierr.RateLimited {
		t.Fatalf("third subscription of a free key: %v; want rate_limited", err)
	}
	endSub()
	reg.Close(stream)
	if err := ws.Acquire(ctx); err != nil {
		t.Fatalf("subscription once two ended: %v; want it admitted", err)
	}
	if _, err := reg.Open(ctx, free, func(int, string) {}, false); err != nil {
		t.Fatalf("connection once the stream closed: %v; want it admitted", err)
	}
}

// TestCapsOfPlans: the documented caps, an unnamed plan getting enterprise's.
func TestCapsOfPlans(t *testing.T) {
	c := DefaultCaps()
	for plan, want := range map[string]int{auth.Free.Name: 2, auth.Pro.Name: 20, auth.Business.Name: 200, "enterprise": 1000, "other": 1000} {
		if got := c.capOf(plan); got != want {
			t.Errorf("cap of %s: %d; want %d", plan, got, want)
		}
	}
}

// TestCapacity: the instance holds at most Capacity.Connections connections and
// Capacity.Pending sockets without a key (503 unavailable past them), and a client address at
// most Caps.PendingPerAddr of those (429); what is given back is free again.
func TestCapacity(t *testing.T) {
	caps := DefaultCaps()
	caps.PendingPerAddr = 2
	reg := newTestRegistry(t, RegistryOptions{Caps: caps, Capacity: Capacity{Connections: 5, Pending: 3}})
	for i, addr := range []string{"a", "a", "b"} {
		if err := reg.AdmitConn(addr); err != nil {
			t.Fatalf("pending socket %d: %v", i, err)
		}
	}
	if err := reg.AdmitConn("a"); err == nil || err.Code != apierr.RateLimited {
		t.Fatalf("third pending socket of an address: %v; want rate_limited", err)
	}
	if err := reg.AdmitConn("c"); err == nil || err.Code != apierr.Unavailable {
		t.Fatalf("pending socket past the instance's: %v; want unavailable", err)
	}
	for range 2 {
		if err := reg.AdmitConn(""); err != nil {
			t.Fatalf("connection with a key: %v", err)
		}
	}
	if err := reg.AdmitConn(""); err == nil || err.Code != apierr.Unavailable {
		t.Fatalf("connection past the instance's: %v; want unavailable", err)
	}
	reg.ReleasePending("a")
	reg.ReleaseConn()
	if err := reg.AdmitConn("a"); err != nil {
		t.Fatalf("pending socket once one was given back: %v", err)
	}
}

// TestCapacityFor: connections sized from memory past what the service keeps, at least
// minConnections, half of them pending; a zero Capacity is sized for DefaultMemory.
func TestCapacityFor(t *testing.T) {
	c := CapacityFor(ReservedMemory + 1000*ConnectionMemory)
	if c.Connections != 1000 || c.Pending != 500 {
		t.Fatalf("CapacityFor: %+v; want 1000 connections, 500 pending", c)
	}
	if c := CapacityFor(0); c.Connections != minConnections {
		t.Fatalf("CapacityFor(0): %+v; want %d connections", c, minConnections)
	}
	if got, want := (Capacity{}).withDefaults(), CapacityFor(DefaultMemory); got != want {
		t.Fatalf("zero Capacity: %+v; want %+v", got, want)
	}
}

// TestRefusedInRow: a WebSocket whose operations are refused MaxRefusedInRow times in a row
// is cut off with CloseBadRequest; one admitted operation starts the count again; an SSE
// stream is never cut off so.
func TestRefusedInRow(t *testing.T) {
	reg := newTestRegistry(t, RegistryOptions{})
	var got cuts
	c, err := reg.Open(context.Background(), &auth.Principal{KeyID: 1, Plan: auth.Pro}, got.cut, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithConn(context.Background(), c)
	for range MaxRefusedInRow - 1 {
		reg.Refused(ctx)
	}
	reg.Admitted(ctx)
	for range MaxRefusedInRow - 1 {
		reg.Refused(ctx)
	}
	if len(got.list()) != 0 {
		t.Fatalf("cut off with %v before %d refusals in a row", got.list(), MaxRefusedInRow)
	}
	reg.Refused(ctx)
	if codes := got.list(); len(codes) != 1 || codes[0] != live.CloseBadRequest {
		t.Fatalf("cut off with %v; want %d once", codes, live.CloseBadRequest)
	}

	var streamCuts cuts
	s, _ := reg.Open(context.Background(), &auth.Principal{KeyID: 2, Plan: auth.Pro}, streamCuts.cut, true)
	sctx := WithConn(context.Background(), s)
	for range MaxRefusedInRow {
		reg.Refused(sctx)
	}
	if len(streamCuts.list()) != 0 {
		t.Fatalf("SSE stream cut off with %v; want never", streamCuts.list())
	}
}

// TestChargeByTransport: an operation on a WebSocket is charged its whole cost, one on an SSE
// stream its cost past the one request of the stream, one of no connection nothing here.
func TestChargeByTransport(t *testing.T) {
	var mu sync.Mutex
	var charged []int
	reg := newTestRegistry(t, RegistryOptions{Charge: func(_ context.Context, _ *auth.Principal, n int) error {
		mu.Lock()
		defer mu.Unlock()
		charged = append(charged, n)
		return nil
	}})
	ws, _ := reg.Open(context.Background(), &auth.Principal{KeyID: 1, Plan: auth.Pro}, func(int, string) {}, false)
	stream, _ := reg.Open(context.Background(), &auth.Principal{KeyID: 2, Plan: auth.Pro}, func(int, string) {}, true)
	for _, ctx := range []context.Context{WithConn(context.Background(), ws), WithConn(context.Background(), stream), context.Background()} {
		if err := reg.Charge(ctx, 5); err != nil {
			t.Fatal(err)
		}
	}
	_ = reg.Charge(WithConn(context.Background(), stream), 1) // the stream's request paid for it
	mu.Lock()
	defer mu.Unlock()
	if len(charged) != 2 || charged[0] != 5 || charged[1] != 4 {
		t.Fatalf("charged %v; want [5 4]", charged)
	}
}

// TestShutdownCutsEverything: Shutdown cuts every connection off with CloseGoingAway and then
// refuses new ones as shutting down.
func TestShutdownCutsEverything(t *testing.T) {
	reg := NewRegistry(live.NewHub(live.HubOptions{}), RegistryOptions{})
	var got cuts
	for id := range int64(3) {
		if _, err := reg.Open(context.Background(), &auth.Principal{KeyID: id, Plan: auth.Pro}, got.cut, id == 0); err != nil {
			t.Fatal(err)
		}
	}
	reg.Shutdown()
	if codes := got.list(); len(codes) != 3 || codes[0] != live.CloseGoingAway || codes[1] != live.CloseGoingAway || codes[2] != live.CloseGoingAway {
		t.Fatalf("cut off with %v; want %d three times", codes, live.CloseGoingAway)
	}
	if _, err := reg.Open(context.Background(), &auth.Principal{KeyID: 9, Plan: auth.Pro}, got.cut, false); err != live.ErrShuttingDown {
		t.Fatalf("Open after Shutdown: %v; want ErrShuttingDown", err)
	}
}
