package client_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
