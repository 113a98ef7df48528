package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/client"
)

// fast is a retry policy with short backoffs, for fakes that answer at once.
var fast = client.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}

// exchange is one request a fake server received.
type exchange struct {
	method, path, query, idempotencyKey, auth, body string
}

// fake is an httptest server answering with answer(n, request) for its n-th request (from
// 1); it records every request.
type fake struct {
	*httptest.Server
	mu   sync.Mutex
	seen []exchange
}

func newFake(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, exchange{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Idempotency-Key"),
			r.Header.Get("Authorization"), string(body)})
		n := len(f.seen)
		f.mu.Unlock()
		answer(n, w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// requests returns what the fake received so far.
func (f *fake) requests() []exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]exchange(nil), f.seen...)
}

// petStore returns a PetStore for f with the policy p.
func (f *fake) petStore(t *testing.T, p client.RetryPolicy) *client.PetStore {
	t.Helper()
	c, err := client.New(client.Config{BaseURL: f.URL + "/v1", APIKey: "petstore_test_k", Retry: p})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeJSON answers status with the JSON body and the headers given as name, value pairs.
func writeJSON(w http.ResponseWriter, status int, body string, header ...string) {
	for i := 0; i+1 < len(header); i += 2 {
		w.Header().Set(header[i], header[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func errorBody(code string, status int) string {
	return fmt.Sprintf(`{"code":%q,"message":"m","status":%d}`, code, status)
}

const rex = `{"id":7,"name":"Rex","categoryId":3}`

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

// TestPetsFollowsNextLinks checks that the iterator walks every page through the Link
// rel="next" headers, keeps the filter and page size, and stops when the caller breaks.
func TestPetsFollowsNextLinks(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.Atoi(r.URL.Query().Get("after")) // 0 on the first page
		var header []string
		if after+2 < 5 {
			header = []string{"Link", fmt.Sprintf(`</v1/pets?after=%d&limit=2&status=sold>; rel="next", </v1/docs>; rel="help"`, after+2)}
		}
		body := "["
		for id := after + 1; id <= min(after+2, 5); id++ {
			if id > after+1 {
				body += ","
			}
			body += fmt.Sprintf(`{"id":%d,"name":"P%d","categoryId":1,"status":"sold"}`, id, id)
		}
		writeJSON(w, 200, body+"]", header...)
	})
	c := f.petStore(t, fast)
	limit, sold := 2, client.PetStatus("sold")
	var ids []int64
	for pet, err := range c.Pets(t.Context(), client.ListPetsParams{Limit: &limit, Status: &sold}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, pet.Id)
	}
	if fmt.Sprint(ids) != "[1 2 3 4 5]" {
		t.Errorf("ids: got %v; want [1 2 3 4 5]", ids)
	}
	seen := f.requests()
	want := []string{"limit=2&status=sold", "after=2&limit=2&status=sold", "after=4&limit=2&status=sold"}
	if len(seen) != len(want) {
		t.Fatalf("requests: got %+v; want %d", seen, len(want))
	}
	for i, q := range want {
		if got, _ := url.ParseQuery(seen[i].query); got.Encode() != q {
			t.Errorf("page %d query: got %q; want %q", i+1, seen[i].query, q)
		}
	}

	for range c.Pets(t.Context(), client.ListPetsParams{Limit: &limit}) {
		break
	}
	if n := len(f.requests()) - len(seen); n != 1 {
		t.Errorf("requests after breaking on the first pet: got %d; want 1", n)
	}
}

// TestPetsYieldsErrors checks that an error answer ends the iteration with that error.
func TestPetsYieldsErrors(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			writeJSON(w, 200, `[{"id":1,"name":"A","categoryId":1}]`, "Link", `</v1/pets?after=x>; rel="next"`)
			return
		}
		writeJSON(w, 400, errorBody("invalid_request", 400))
	})
	var ids []int64
	var errs []error
	for pet, err := range f.petStore(t, fast).Pets(t.Context(), client.ListPetsParams{}) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, pet.Id)
	}
	var apiErr *client.Error
	if len(ids) != 1 || len(errs) != 1 || !errors.As(errs[0], &apiErr) || apiErr.Status != 400 {
		t.Errorf("got ids %v and errors %v; want [1] and the 400", ids, errs)
	}
}

// TestRateLimitOfTheLastAnswer checks that RateLimit reports the headers of the last answer,
// an error answer's included.
func TestRateLimitOfTheLastAnswer(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		h := []string{"X-RateLimit-Limit", "60", "X-RateLimit-Remaining", strconv.Itoa(60 - n), "X-RateLimit-Reset", "1767225660",
			"RateLimit-Policy", `"minute";q=60;w=60, "day";q=1000;w=86400`, "RateLimit", fmt.Sprintf(`"minute";r=%d;t=13`, 60-n)}
		if n == 1 {
			writeJSON(w, 200, `[]`, h...)
			return
		}
		writeJSON(w, 429, errorBody("rate_limited", 429), append(h, "Retry-After", "300")...)
	})
	c := f.petStore(t, fast)
	if got := c.RateLimit(); got != (client.RateLimit{}) {
		t.Errorf("before any answer: got %+v; want the zero RateLimit", got)
	}
	_, _ = c.ListPets(t.Context(), client.ListPetsParams{})
	if got := c.RateLimit(); got.Limit != 60 || got.Remaining != 59 || got.RetryAfter != 0 {
		t.Errorf("after the 200: got %+v; want limit 60, 59 remaining", got)
	}
	_, _ = c.ListPets(t.Context(), client.ListPetsParams{})
	want := client.RateLimit{Limit: 60, Remaining: 58, Reset: time.Unix(1767225660, 0),
		Policy: `"minute";q=60;w=60, "day";q=1000;w=86400`, Current: `"minute";r=58;t=13`, RetryAfter: 300 * time.Second}
	if got := c.RateLimit(); got != want {
		t.Errorf("after the 429: got %+v; want %+v", got, want)
	}
}

// TestNewRefusesBadConfig checks New's checks of its settings.
func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []client.Config{{BaseURL: "api.petstore.example/v1", APIKey: "k"}, {BaseURL: "https://api.petstore.example/v1"}} {
		if _, err := client.New(cfg); err == nil {
			t.Errorf("New(%+v): got no error", cfg)
		}
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
