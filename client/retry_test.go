package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/client"
)

// TestCreateRetriesWithOneIdempotencyKey checks that a create answered 503, 429, 409
// idempotency_key_in_use and then 201 is sent four times with the same body and
// Idempotency-Key, and that the next create has a key of its own.
func TestCreateRetriesWithOneIdempotencyKey(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 1:
			writeJSON(w, 503, errorBody("unavailable", 503))
		case 2:
			writeJSON(w, 429, errorBody("rate_limited", 429))
		case 3:
			writeJSON(w, 409, errorBody("idempotency_key_in_use", 409))
		default:
			writeJSON(w, 201, rex)
		}
	})
	c := f.petStore(t, fast)
	for range 2 {
		pet, err := c.CreatePet(t.Context(), client.NewPet{Name: "Rex", CategoryId: 3})
		if err != nil || pet.Id != 7 || pet.Name != "Rex" {
			t.Fatalf("CreatePet: got %+v, %v; want Rex with id 7", pet, err)
		}
	}
	seen := f.requests()
	if len(seen) != 5 {
		t.Fatalf("requests: got %d; want 5 (four for the first create, one for the second)", len(seen))
	}
	for i, ex := range seen[:4] {
		if ex.method != http.MethodPost || ex.path != "/v1/pets" || ex.auth != "Bearer petstore_test_k" ||
			ex.body != seen[0].body || ex.idempotencyKey == "" || ex.idempotencyKey != seen[0].idempotencyKey {
			t.Errorf("attempt %d: got %+v; want the first attempt's POST with its body and Idempotency-Key %q", i+1, ex, seen[0].idempotencyKey)
		}
	}
	if k := seen[4].idempotencyKey; k == "" || k == seen[0].idempotencyKey {
		t.Errorf("second create's Idempotency-Key: got %q; want a new one (the first was %q)", k, seen[0].idempotencyKey)
	}
}

// TestRetryAfterIsWaited checks that a 429 with Retry-After: 1 is retried no sooner than a
// second later.
func TestRetryAfterIsWaited(t *testing.T) {
	var first time.Time
	var waited time.Duration
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			first = time.Now()
			writeJSON(w, 429, errorBody("rate_limited", 429), "Retry-After", "1")
			return
		}
		waited = time.Since(first)
		writeJSON(w, 200, `[]`)
	})
	if _, err := f.petStore(t, fast).ListPets(t.Context(), client.ListPetsParams{}); err != nil {
		t.Fatal(err)
	}
	if len(f.requests()) != 2 || waited < time.Second {
		t.Errorf("got %d requests, the retry %v after the 429; want 2, at least 1s after", len(f.requests()), waited)
	}
}

// TestRetriesConnectionFailures checks that a POST whose connection breaks before the answer
// is sent again with the same Idempotency-Key.
func TestRetriesConnectionFailures(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		writeJSON(w, 201, rex)
	})
	if _, err := f.petStore(t, fast).CreatePet(t.Context(), client.NewPet{Name: "Rex", CategoryId: 3}); err != nil {
		t.Fatal(err)
	}
	seen := f.requests()
	if len(seen) != 2 || seen[0].idempotencyKey != seen[1].idempotencyKey || seen[1].body != seen[0].body {
		t.Errorf("got %+v; want two attempts with one key and body", seen)
	}
}

// TestWhatIsNotRetried checks the answers that are returned at once: client errors, 500, a
// Retry-After over MaxRetryAfter, and one that the context's deadline would cut short.
func TestWhatIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		code     string
		header   []string
		deadline time.Duration
	}{
		{"400", 400, "invalid_request", nil, 0},
		{"401", 401, "unauthorized", nil, 0},
		{"500", 500, "internal_error", nil, 0},
		{"suspended", 429, "key_suspended", []string{"Retry-After", "300"}, 0},
		{"deadline", 503, "unavailable", []string{"Retry-After", "5"}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
				writeJSON(w, tc.status, errorBody(tc.code, tc.status), tc.header...)
			})
			ctx := t.Context()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			start := time.Now()
			_, err := f.petStore(t, fast).ListPets(ctx, client.ListPetsParams{})
			var apiErr *client.Error
			if !errors.As(err, &apiErr) || apiErr.Status != tc.status || string(apiErr.Code) != tc.code {
				t.Fatalf("got %v; want the %d %s answer as *client.Error", err, tc.status, tc.code)
			}
			if n := len(f.requests()); n != 1 || time.Since(start) > 500*time.Millisecond {
				t.Errorf("got %d requests in %v; want 1, at once", n, time.Since(start))
			}
		})
	}
}

// TestAttemptsAreBounded checks that a service that keeps answering 503 gets MaxAttempts
// requests (4 by default), and the caller its last answer.
func TestAttemptsAreBounded(t *testing.T) {
	for maxAttempts, want := range map[int]int{0: 4, 1: 1, 3: 3} {
		f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 503, errorBody("unavailable", 503))
		})
		p := fast
		p.MaxAttempts = maxAttempts
		_, err := f.petStore(t, p).CreatePet(t.Context(), client.NewPet{Name: "Rex", CategoryId: 3})
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 503 || apiErr.Code != client.ErrorCode("unavailable") {
			t.Errorf("MaxAttempts %d: got %v; want the 503 unavailable answer", maxAttempts, err)
		}
		if n := len(f.requests()); n != want {
			t.Errorf("MaxAttempts %d: got %d requests; want %d", maxAttempts, n, want)
		}
	}
}

// TestCancelDuringWait checks that cancelling the context ends a wait for a retry.
func TestCancelDuringWait(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 429, errorBody("rate_limited", 429), "Retry-After", "30")
	})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := f.petStore(t, fast).ListPets(ctx, client.ListPetsParams{})
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Errorf("got %v after %v; want context.Canceled at once", err, time.Since(start))
	}
}

// TestBodiesThatCannotBeReadAgainAreNotRetried checks that a create sent through the
// generated client with a body that has no GetBody is sent once, and with one that has, again.
func TestBodiesThatCannotBeReadAgainAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		body io.Reader
		want int
	}{
		{"a stream", io.MultiReader(strings.NewReader(`{"name":"Rex","categoryId":3}`)), 1},
		{"a strings.Reader", strings.NewReader(`{"name":"Rex","categoryId":3}`), 2},
	} {
		f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 503, errorBody("unavailable", 503))
		})
		p := fast
		p.MaxAttempts = 2
		resp, err := f.petStore(t, p).API.CreatePetWithBodyWithResponse(t.Context(), nil, "application/json", tc.body)
		if err != nil || resp.StatusCode() != 503 {
			t.Fatalf("%s: got %v; want the 503", tc.name, err)
		}
		if seen := f.requests(); len(seen) != tc.want || seen[len(seen)-1].body != `{"name":"Rex","categoryId":3}` {
			t.Errorf("%s: got %+v; want %d requests with the whole body", tc.name, seen, tc.want)
		}
	}
}
