package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/app"
	"petstore/auth"
	"petstore/config"
	"petstore/store"
)

// newHookAPI is newTestAPIConfig with the service's background work running (the webhook
// dispatcher among it) until the test ends, and opts passed to app.New.
func newHookAPI(t testing.TB, db *store.DB, cfg config.Config, opts ...app.Option) *testAPI {
	t.Helper()
	svc, err := app.New(cfg, db, nil, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	api := &testAPI{h: svc.Handler, db: db, cfg: cfg, v: validator(t, svc.Handler)}
	api.key = api.createKey(t, auth.KeySpec{Plan: auth.Business.Name})
	t.Cleanup(svc.Background(context.Background()))
	return api
}

// hookConfig returns the default settings with deliveries allowed to loopback receivers and
// retried after waits short enough for a test.
func hookConfig(schedule ...time.Duration) config.Config {
	cfg := app.DefaultConfig()
	cfg.Webhooks.AllowPrivate = true
	cfg.Webhooks.Schedule = schedule
	cfg.Webhooks.Timeout = 2 * time.Second
	return cfg
}

// createHook registers url for pet.created and returns the endpoint's id and secret.
func (api *testAPI) createHook(t *testing.T, url string) (id, secret string) {
	t.Helper()
	resp := api.do(t, post("/v1/webhooks", `{"url":"`+url+`","events":["pet.created"]}`))
	if resp.status != http.StatusCreated {
		t.Fatalf("POST /v1/webhooks: got %d %s; want 201", resp.status, resp.body)
	}
	var e struct{ ID, Secret string }
	if err := json.Unmarshal([]byte(resp.body), &e); err != nil {
		t.Fatal(err)
	}
	return e.ID, e.Secret
}

// hookCall is one request a receiver got.
type hookCall struct {
	header http.Header
	body   []byte
}

// receiver is a webhook receiver on loopback: it records every request, and answers each
// with the status its constructor's function gives.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	calls []hookCall
}

// newReceiver starts a receiver, which the test closes, that answers the nth request (from 1)
// with the status answer returns (200 when answer is nil).
func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	t.Helper()
	return startReceiver(t, func(n int, _ []byte) int {
		if answer == nil {
			return http.StatusOK
		}
		return answer(n)
	})
}

// newReceiverBy starts a receiver, which the test closes, that answers each delivery with the
// status that status returns of its event.
func newReceiverBy(t *testing.T, status func(ev event) int) *receiver {
	t.Helper()
	return startReceiver(t, func(_ int, body []byte) int {
		var ev event
		_ = json.Unmarshal(body, &ev)
		return status(ev)
	})
}

// startReceiver starts a receiver, which the test closes, that answers the nth request (from 1),
// whose body is body, with the status answer returns.
func startReceiver(t *testing.T, answer func(n int, body []byte) int) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.calls = append(r.calls, hookCall{req.Header.Clone(), body})
		n := len(r.calls)
		r.mu.Unlock()
		w.WriteHeader(answer(n, body))
	}))
	t.Cleanup(r.Close)
	return r
}

// snapshot returns the requests so far.
func (r *receiver) snapshot() []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookCall(nil), r.calls...)
}

// waitFor waits up to timeout for ok to hold of the requests, and returns them.
func (r *receiver) waitFor(t *testing.T, timeout time.Duration, what string, ok func([]hookCall) bool) []hookCall {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		calls := r.snapshot()
		if ok(calls) {
			return calls
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s: got %d requests", timeout, what, len(calls))
		}
	}
}

// verify checks the signature of c with the secret through the Standard Webhooks library.
func verify(t *testing.T, secret string, c hookCall) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(c.body, c.header); err != nil {
		t.Errorf("signature of %s: %v (webhook-signature %q)", c.header.Get("webhook-id"), err, c.header.Get("webhook-signature"))
	}
}

// event is the body of a pet.created delivery.
type event struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		Cursor string `json:"cursor"`
		Pet    struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"pet"`
	} `json:"data"`
}

// decodeEvent returns the body of c.
func decodeEvent(t *testing.T, c hookCall) event {
	t.Helper()
	var ev event
	if err := json.Unmarshal(c.body, &ev); err != nil {
		t.Fatalf("body %s: %v", c.body, err)
	}
	return ev
}

// names returns the distinct pet names delivered in calls.
func names(t *testing.T, calls []hookCall) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, c := range calls {
		out[decodeEvent(t, c).Data.Pet.Name] = true
	}
	return out
}

// testResolver answers names ending in .test from its table, and nothing else: no DNS
// traffic leaves the process. Its answers may change while it serves (rebinding).
type testResolver struct {
	mu    sync.Mutex
	hosts map[string]string
}

// LookupNetIP returns the address of host in the table.
func (r *testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ip, ok := r.hosts[strings.TrimSuffix(host, ".")]; ok {
		return []netip.Addr{netip.MustParseAddr(ip)}, nil
	}
	return nil, &netErr{host}
}

// set makes host resolve to ip.
func (r *testResolver) set(host, ip string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hosts[host] = ip
}

// netErr is the answer of a name the test resolver does not know.
type netErr struct{ host string }

func (e *netErr) Error() string { return "no such host " + e.host }
