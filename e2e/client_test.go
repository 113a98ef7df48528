package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/auth"
	"petstore/client"
	"petstore/store"
	"petstore/testkit/apitest"
	"petstore/testkit/dbtest"
)

// quick is the retry policy of the end-to-end tests: Retry-After is still waited for, the
// backoff on top of it is short.
var quick = client.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}

// seenAnswer is one answer of the real service as the client received it.
type seenAnswer struct {
	method, path string
	status       int
	header       http.Header
	body         string
	at           time.Time
}

// checkedTransport sends the client's requests to the service and checks that each is an
// operation of the OpenAPI document it serves and each answer is one the document allows;
// it keeps the answers for the test to inspect.
type checkedTransport struct {
	t    *testing.T
	v    *apitest.Validator
	next http.RoundTripper

	mu      sync.Mutex
	answers []seenAnswer
}

func (c *checkedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if !c.v.Check(c.t, r, resp.StatusCode, resp.Header, body) {
		c.t.Errorf("the client sent %s %s, which the OpenAPI document does not describe", r.Method, r.URL.RequestURI())
	}
	c.mu.Lock()
	c.answers = append(c.answers, seenAnswer{r.Method, r.URL.Path, resp.StatusCode, resp.Header, string(body), time.Now()})
	c.mu.Unlock()
	return resp, nil
}

// seen returns the answers received so far.
func (c *checkedTransport) seen() []seenAnswer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]seenAnswer(nil), c.answers...)
}

// clientOf returns a client of the service at base (ending in /v1) with key, whose requests
// go through wrap (nil for none) and then a checkedTransport, which it returns too.
func clientOf(t *testing.T, v *apitest.Validator, base, key string, wrap func(http.RoundTripper) http.RoundTripper) (*client.PetStore, *checkedTransport) {
	t.Helper()
	checked := &checkedTransport{t: t, v: v, next: http.DefaultTransport}
	var rt http.RoundTripper = checked
	if wrap != nil {
		rt = wrap(checked)
	}
	c, err := client.New(client.Config{BaseURL: base, APIKey: key, HTTPClient: &http.Client{Transport: rt}, Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	return c, checked
}

// client returns a client of api served over HTTP by an httptest server.
func (api *testAPI) client(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper) (*client.PetStore, *checkedTransport) {
	t.Helper()
	srv := httptest.NewServer(api.h)
	t.Cleanup(srv.Close)
	return clientOf(t, api.v, srv.URL+"/v1", api.key, wrap)
}

// loseFirstPOSTAnswer is a proxy that passes the first POST on to the service but drops its
// answer and answers 503 with Retry-After: 1 itself, as a gateway whose upstream timed out.
type loseFirstPOSTAnswer struct {
	next http.RoundTripper
	lost atomic.Int32
}

func (p *loseFirstPOSTAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || !p.lost.CompareAndSwap(0, 1) {
		return resp, err
	}
	resp.Body.Close()
	body := `{"code":"unavailable","message":"upstream timed out","status":503}`
	return &http.Response{
		StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}},
		Body:    io.NopCloser(strings.NewReader(body)),
		Request: r, ContentLength: int64(len(body)),
	}, nil
}

// allPets lists every pet through the client's iterator.
func allPets(t *testing.T, c *client.PetStore, params client.ListPetsParams) []client.Pet {
	t.Helper()
	var pets []client.Pet
	for pet, err := range c.Pets(t.Context(), params) {
		if err != nil {
			t.Fatal(err)
		}
		pets = append(pets, pet)
	}
	return pets
}

// TestClientEndToEnd drives the real router on each store with the Go client (package
// client, generated from the served document), every answer checked against that document.
func TestClientEndToEnd(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		t.Run("a create whose answer is lost is retried and stored once", func(t *testing.T) {
			var proxy *loseFirstPOSTAnswer
			c, checked := api.client(t, func(next http.RoundTripper) http.RoundTripper {
				proxy = &loseFirstPOSTAnswer{next: next}
				return proxy
			})
			start := time.Now()
			pet, err := c.CreatePet(t.Context(), client.NewPet{Name: "Lost answer", CategoryId: 4})
			if err != nil {
				t.Fatal(err)
			}
			if proxy.lost.Load() != 1 || time.Since(start) < time.Second {
				t.Errorf("the proxy lost %d answers, the create took %v; want 1, at least the 1s of Retry-After",
					proxy.lost.Load(), time.Since(start))
			}
			seen := checked.seen()
			if len(seen) != 2 || seen[0].status != http.StatusCreated || seen[1].status != http.StatusCreated ||
				seen[1].header.Get("Idempotent-Replayed") != "true" || seen[1].body != seen[0].body {
				t.Fatalf("the service answered %+v; want 201 and its replay", seen)
			}
			pets := allPets(t, c, client.ListPetsParams{})
			if len(pets) != 1 || describe(pets...) != describe(pet) {
				t.Errorf("stored: got %+v; want only %+v", pets, pet)
			}
		})

		t.Run("the iterator pages through every pet", func(t *testing.T) {
			c, checked := api.client(t, nil)
			want := allPets(t, c, client.ListPetsParams{}) // the previous subtest's
			var sold []client.Pet
			for i := range 23 {
				status := []client.PetStatus{"available", "pending", "sold"}[i%3]
				pet, err := c.CreatePet(t.Context(), client.NewPet{Name: fmt.Sprintf("Pet %d", i), CategoryId: int64(i + 1), Status: &status})
				if err != nil {
					t.Fatal(err)
				}
				if pet.Name != fmt.Sprintf("Pet %d", i) || pet.Status == nil || *pet.Status != status {
					t.Fatalf("created %+v; want Pet %d, %s", pet, i, status)
				}
				want = append(want, pet)
				if status == "sold" {
					sold = append(sold, pet)
				}
			}
			before := len(checked.seen())
			limit := 5
			got := allPets(t, c, client.ListPetsParams{Limit: &limit})
			if describe(got...) != describe(want...) {
				t.Errorf("all pets by 5: got %s; want %s", describe(got...), describe(want...))
			}
			if pages := len(checked.seen()) - before; pages != 5 {
				t.Errorf("pages of 5 for 24 pets: got %d requests; want 5", pages)
			}
			filter := client.PetStatus("sold")
			limit = 3
			if got := allPets(t, c, client.ListPetsParams{Limit: &limit, Status: &filter}); describe(got...) != describe(sold...) {
				t.Errorf("sold pets by 3: got %s; want %s", describe(got...), describe(sold...))
			}

			rl := c.RateLimit()
			if rl.Limit != 1000 || rl.Remaining < 0 || rl.Remaining >= 1000 || rl.Reset.Before(time.Now().Add(-time.Second)) ||
				rl.Reset.After(time.Now().Add(61*time.Second)) || rl.Policy != `"minute";q=1000;w=60, "day";q=100000;w=86400` ||
				!strings.HasPrefix(rl.Current, `"minute";r=`) {
				t.Errorf("rate limit of the last answer: got %+v; want the business plan's minute window", rl)
			}
		})

		t.Run("client errors are *client.Error with the contract's code", func(t *testing.T) {
			c, _ := api.client(t, nil)
			_, err := c.CreatePet(t.Context(), client.NewPet{Name: " ", CategoryId: 1})
			var apiErr *client.Error
			if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "invalid_request" || !strings.Contains(apiErr.Message, "name") {
				t.Errorf("a blank name: got %v; want 400 invalid_request naming the field", err)
			}
			if _, err := c.GetPet(t.Context(), 1<<40); !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "not_found" {
				t.Errorf("an unknown id: got %v; want 404 not_found", err)
			}
		})
	})
}

// TestClientWaitsRetryAfter checks, on each store, that a client over its limit is answered
// 429 and served after waiting the Retry-After it was given: a key allowed 2 requests a
// minute, under a limiter whose clock is shifted so that its minute ends 2.5 s into the test.
func TestClientWaitsRetryAfter(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		var shift atomic.Int64
		api := newTestAPIClock(t, db, func() time.Time { return time.Now().Add(time.Duration(shift.Load())) })
		key := api.createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 2, PerDay: 100})
		srv := httptest.NewServer(api.h)
		t.Cleanup(srv.Close)
		c, checked := clientOf(t, api.v, srv.URL+"/v1", key, nil)

		end := time.Now().Add(2500 * time.Millisecond) // where the limiter's minute ends
		shift.Store(int64(end.Truncate(time.Minute).Add(time.Minute).Sub(end)))
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		for i := range 2 {
			if _, err := c.CreatePet(ctx, client.NewPet{Name: fmt.Sprint("Within the limit ", i), CategoryId: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if rl := c.RateLimit(); rl.Limit != 2 || rl.Remaining != 0 {
			t.Errorf("after 2 requests: got %+v; want limit 2, 0 remaining", rl)
		}
		pets, err := c.ListPets(ctx, client.ListPetsParams{})
		if err != nil || len(pets.Pets) != 2 {
			t.Fatalf("the third request: got %+v, %v; want the two pets once the minute is over", pets, err)
		}
		seen := checked.seen()
		if len(seen) != 4 || seen[2].status != http.StatusTooManyRequests || seen[3].status != http.StatusOK {
			t.Fatalf("answers: got %+v; want 201, 201, 429, 200", seen)
		}
		retryAfter := seen[2].header.Get("Retry-After")
		if waited := seen[3].at.Sub(seen[2].at); waited < mustSeconds(t, retryAfter)-50*time.Millisecond {
			t.Errorf("the retry came %v after the 429 with Retry-After %q; want at least that", waited, retryAfter)
		}
		if rl := c.RateLimit(); rl.Limit != 2 || rl.Remaining != 1 || rl.RetryAfter != 0 {
			t.Errorf("after the retry: got %+v; want limit 2, 1 remaining in the new minute", rl)
		}
	})
}

// mustSeconds parses a Retry-After of whole seconds.
func mustSeconds(t *testing.T, v string) time.Duration {
	t.Helper()
	s, err := strconv.Atoi(v)
	if err != nil || s < 1 {
		t.Fatalf("Retry-After %q: want whole seconds, at least 1", v)
	}
	return time.Duration(s) * time.Second
}

// describe spells pets out for comparison (a Pet holds a pointer).
func describe(pets ...client.Pet) string {
	var b strings.Builder
	for _, p := range pets {
		status := "-"
		if p.Status != nil {
			status = string(*p.Status)
		}
		fmt.Fprintf(&b, "{%d %q %d %s}", p.Id, p.Name, p.CategoryId, status)
	}
	return b.String()
}
