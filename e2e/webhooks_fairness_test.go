package e2e

import (
	"encoding/json"
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
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestWebhookSlowReceiverAlone registers a tarpit, an endpoint whose receiver takes every
// request and answers none until it is released, and beside it a healthy endpoint of another
// key, and adds 600 pets: more deliveries to the tarpit than the instance's 512 in flight.
// The healthy endpoint gets every pet within 2 s of its 201 while the tarpit holds at most 64
// deliveries at a time, the rest put back and counted, and gets a pet added once the tarpit's first attempts timed out as
// promptly; once released, the tarpit gets every pet, each under one webhook-id.
func TestWebhookSlowReceiverAlone(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		wait := 500 * time.Millisecond
		cfg := hookConfig(wait, wait, wait, wait, wait)
		cfg.Webhooks.Timeout = 4 * time.Second
		api := newHookAPI(t, db, cfg)
		tarpit := newTarpit(t)
		api.createHook(t, tarpit.URL)
		other := *api
		other.key = api.createKey(t, auth.KeySpec{Plan: auth.Business.Name})
		var mu sync.Mutex
		created, got := map[string]time.Time{}, map[string]time.Time{}
		healthy := newReceiverBy(t, func(ev event) int {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := got[ev.Data.Pet.Name]; !ok {
				got[ev.Data.Pet.Name] = time.Now()
			}
			return http.StatusNoContent
		})
		other.createHook(t, healthy.URL)
		const pets = 600
		for i := range pets {
			name := "Pet" + strconv.Itoa(i)
			postPetNamed(t, api, name)
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
		}
		within(t, 3*time.Second, "the healthy endpoint got every pet", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) == pets
		})
		var worst time.Duration
		for name, at := range created {
			worst = max(worst, got[name].Sub(at))
		}
		t.Logf("healthy endpoint: slowest delivery %v after its 201", worst)
		if worst > 2*time.Second {
			t.Errorf("healthy endpoint beside a tarpit: a pet came %v after its 201; want within 2 s", worst)
		}
		time.Sleep(time.Until(tarpit.first().Add(cfg.Webhooks.Timeout + time.Second))) // its first attempts timed out
		start := time.Now()
		postPetNamed(t, api, "Late")
		within(t, 2*time.Second, "the healthy endpoint got a pet added once the tarpit's attempts timed out", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return !got["Late"].IsZero()
		})
		mu.Lock()
		t.Logf("healthy endpoint: a pet added after the tarpit's timeouts came %v after its 201", got["Late"].Sub(start))
		mu.Unlock()
		if p := tarpit.peak.Load(); p != 64 {
			t.Errorf("tarpit: %d deliveries in flight at most; want 64, its share", p)
		}
		if n := deferredMetric(t, api); n == 0 {
			t.Error("petstore_webhook_deliveries_deferred_total: got 0; want the tarpit's deliveries put back counted")
		}
		close(tarpit.release)
		within(t, 10*time.Second, "the released tarpit got every pet", func() bool { return tarpit.acked() == pets+1 })
		for name, ids := range tarpit.idsByPet() {
			if len(ids) != 1 {
				t.Errorf("tarpit: %s came under %d webhook-ids; want one", name, len(ids))
			}
		}
	})
}

// deferredMetric returns petstore_webhook_deliveries_deferred_total as api's /metrics shows it.
func deferredMetric(t *testing.T, api *testAPI) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	api.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "petstore_webhook_deliveries_deferred_total "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics: %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatal("/metrics lacks petstore_webhook_deliveries_deferred_total")
	return 0
}

// tarpit is a receiver that takes every request and answers none until release is closed,
// then acknowledges each. It records each pet's webhook-ids and the pets acknowledged.
type tarpit struct {
	*httptest.Server
	release        chan struct{}
	inFlight, peak atomic.Int64 // requests held now; the most held until cut
	cut            atomic.Bool  // a sender gave up: its request may count here a moment after it let go
	mu             sync.Mutex
	start          time.Time                  // when the first request came
	ids            map[string]map[string]bool // pet name: webhook-ids
	ok             map[string]bool            // pets acknowledged to a sender still waiting
}

// newTarpit starts a tarpit; the test releases and closes it.
func newTarpit(t *testing.T) *tarpit {
	t.Helper()
	tp := &tarpit{release: make(chan struct{}), ids: map[string]map[string]bool{}, ok: map[string]bool{}}
	tp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ev event
		_ = json.Unmarshal(body, &ev)
		name := ev.Data.Pet.Name
		tp.mu.Lock()
		if tp.start.IsZero() {
			tp.start = time.Now()
		}
		if tp.ids[name] == nil {
			tp.ids[name] = map[string]bool{}
		}
		tp.ids[name][req.Header.Get("webhook-id")] = true
		tp.mu.Unlock()
		n := tp.inFlight.Add(1)
		defer tp.inFlight.Add(-1)
		for p := tp.peak.Load(); n > p && !tp.cut.Load() && !tp.peak.CompareAndSwap(p, n); p = tp.peak.Load() {
		}
		select {
		case <-tp.release:
		case <-req.Context().Done():
			tp.cut.Store(true)
			return
		}
		tp.mu.Lock()
		tp.ok[name] = true
		tp.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		select {
		case <-tp.release:
		default:
			close(tp.release)
		}
		tp.Close()
	})
	return tp
}

// first returns when the first request came.
func (tp *tarpit) first() time.Time {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.start
}

// acked returns how many pets the tarpit acknowledged.
func (tp *tarpit) acked() int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return len(tp.ok)
}

// idsByPet returns the webhook-ids each pet came under.
func (tp *tarpit) idsByPet() map[string]map[string]bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	out := map[string]map[string]bool{}
	for name, ids := range tp.ids {
		out[name] = map[string]bool{}
		for id := range ids {
			out[name][id] = true
		}
	}
	return out
}
