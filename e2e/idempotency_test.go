package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"petstore/apierr"
	"petstore/auth"
	"petstore/models"
)

const idemBody = `{"name":"Rex","categoryId":3,"status":"available"}`

// idemPost is POST /v1/pets with body, and with the Idempotency-Key key unless it is empty.
func idemPost(key, body string) request {
	req := post("/v1/pets", body)
	if key != "" {
		req.header = http.Header{"Idempotency-Key": {key}}
	}
	return req
}

// countPets returns how many pets the store holds.
func countPets(t *testing.T, api *testAPI) int64 {
	t.Helper()
	var n int64
	if err := api.db.Model(&models.Pet{}).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// checkReplay fails t unless got repeats first with Idempotent-Replayed: true.
func checkReplay(t *testing.T, got, first response) {
	t.Helper()
	if got.status != first.status || got.body != first.body {
		t.Errorf("replay: got %d %s; want %d %s", got.status, got.body, first.status, first.body)
	}
	for _, h := range []string{"Content-Type", "Location"} {
		if g, w := got.header.Get(h), first.header.Get(h); g != w {
			t.Errorf("replay %s: got %q; want %q", h, g, w)
		}
	}
	if g := got.header.Get("Idempotent-Replayed"); g != "true" {
		t.Errorf("Idempotent-Replayed: got %q; want true", g)
	}
	if got.header.Get("X-RateLimit-Remaining") == "" {
		t.Errorf("replay: no X-RateLimit-Remaining; want the rate-limit headers of this request")
	}
}

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		first := api.do(t, idemPost("8e03978e-40d5-43e8-bc93-6894a57f9324", idemBody))
		if first.status != http.StatusCreated || first.header.Get("Location") == "" {
			t.Fatalf("first: got %d %v %s; want 201 with a Location", first.status, first.header, first.body)
		}
		if got := first.header.Get("Idempotent-Replayed"); got != "" {
			t.Errorf("first Idempotent-Replayed: got %q; want none", got)
		}
		for range 3 {
			checkReplay(t, api.do(t, idemPost("8e03978e-40d5-43e8-bc93-6894a57f9324", idemBody)), first)
		}
		if got := countPets(t, api); got != 1 {
			t.Errorf("pets: got %d; want 1", got)
		}
	})
}

// TestIdempotencyConcurrentRetries is the test: 50 concurrent retries of one request
// with one key store exactly one animal.
func TestIdempotencyConcurrentRetries(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		const n = 50
		resps := make([]response, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { resps[i] = api.do(t, idemPost("burst", idemBody)) })
		}
		wg.Wait()
		var originals []response
		var replays, inUse int
		for i, r := range resps {
			switch {
			case r.status == http.StatusCreated && r.header.Get("Idempotent-Replayed") == "":
				originals = append(originals, r)
			case r.status == http.StatusCreated:
				replays++
			case r.status == http.StatusConflict:
				inUse++
				checkError(t, r, http.StatusConflict, apierr.IdempotencyKeyInUse, "Idempotency-Key")
				if got := r.header.Get("Retry-After"); got != "1" {
					t.Errorf("request %d Retry-After: got %q; want 1", i, got)
				}
			default:
				t.Errorf("request %d: got %d %s; want 201 or 409", i, r.status, r.body)
			}
		}
		if len(originals) != 1 {
			t.Fatalf("original answers: got %d; want 1 (%d replays, %d in use)", len(originals), replays, inUse)
		}
		for i, r := range resps {
			if r.status == http.StatusCreated && r.body != originals[0].body {
				t.Errorf("request %d: got %s; want the one pet %s", i, r.body, originals[0].body)
			}
		}
		if got := countPets(t, api); got != 1 {
			t.Errorf("pets: got %d; want 1", got)
		}
		t.Logf("%d concurrent retries: 1 original, %d replays, %d in use", n, replays, inUse)
	})
}

func TestIdempotencyKeyReused(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		if r := api.do(t, idemPost("reused", idemBody)); r.status != http.StatusCreated {
			t.Fatalf("first: got %d %s; want 201", r.status, r.body)
		}
		for _, tt := range []struct{ name, body string }{
			{"other pet", `{"name":"Tom","categoryId":3,"status":"available"}`},
			{"same JSON, other spacing", `{"name": "Rex", "categoryId": 3, "status": "available"}`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				checkError(t, api.do(t, idemPost("reused", tt.body)), http.StatusUnprocessableEntity,
					apierr.IdempotencyKeyReused, "Idempotency-Key")
			})
		}
		if got := countPets(t, api); got != 1 {
			t.Errorf("pets: got %d; want 1", got)
		}
	})
}

func TestIdempotencyWithoutKey(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		a, b := api.do(t, idemPost("", idemBody)), api.do(t, idemPost("", idemBody))
		for _, r := range []response{a, b} {
			if r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("got %d %s (Idempotent-Replayed %q); want 201, not a replay",
					r.status, r.body, r.header.Get("Idempotent-Replayed"))
			}
		}
		if a.body == b.body {
			t.Errorf("two POSTs without a key: got the same pet %s twice; want two pets", a.body)
		}
		if got := countPets(t, api); got != 2 {
			t.Errorf("pets: got %d; want 2", got)
		}
	})
}

func TestIdempotencyKeyHeader(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		for _, tt := range []struct {
			name   string
			values []string
		}{
			{"empty", []string{""}},
			{"256 characters", []string{strings.Repeat("k", 256)}},
			{"non-ASCII", []string{"clé"}},
			{"control character", []string{"a\x01b"}},
			{"sent twice", []string{"a", "b"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				req := post("/v1/pets", idemBody)
				req.header = http.Header{"Idempotency-Key": tt.values}
				checkError(t, api.do(t, req), http.StatusBadRequest, apierr.InvalidRequest, "Idempotency-Key")
			})
		}
		if got := countPets(t, api); got != 0 {
			t.Errorf("pets: got %d; want 0", got)
		}
	})
}

func TestIdempotencyScopedToAPIKey(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		other := api.createKey(t, auth.KeySpec{Plan: "business"})
		mine := api.do(t, idemPost("shared", idemBody))
		req := idemPost("shared", idemBody)
		req.header.Set("Authorization", "Bearer "+other)
		theirs := api.do(t, req)
		if mine.status != http.StatusCreated || theirs.status != http.StatusCreated {
			t.Fatalf("got %d and %d; want 201 twice", mine.status, theirs.status)
		}
		if theirs.header.Get("Idempotent-Replayed") != "" || theirs.body == mine.body {
			t.Errorf("other API key: got %s, a replay of %s; want a pet of its own", theirs.body, mine.body)
		}
		checkReplay(t, api.do(t, idemPost("shared", idemBody)), mine)
		if got := countPets(t, api); got != 2 {
			t.Errorf("pets: got %d; want 2", got)
		}
	})
}

func TestIdempotencyReplaysClientErrors(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		body := `{"name":"Rex","categoryId":0}`
		first := api.do(t, idemPost("invalid", body))
		checkError(t, first, http.StatusBadRequest, apierr.InvalidRequest, "categoryId")
		checkReplay(t, api.do(t, idemPost("invalid", body)), first)
	})
}
