package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestWebhookSuccessKeepsEndpoint has the receiver fail every attempt of one pet, and
// acknowledge another that was sent before the first failure was recorded, once it was: the
// endpoint had a success after its deliveries began to fail, so when the failing delivery
// fails for good it stays enabled, and gets the next pet. The schedule's first wait (3 s) is
// longer than what the later attempts span, so only the success can keep it enabled.
func TestWebhookSuccessKeepsEndpoint(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newHookAPI(t, db, hookConfig(3*time.Second, 100*time.Millisecond, 100*time.Millisecond))
		var hookID atomic.Value
		goodSent := make(chan struct{})
		var once sync.Once
		rcv := newReceiverBy(t, func(ev event) int {
			switch ev.Data.Pet.Name {
			case "Poison":
				select { // its first failure is recorded after Good was sent
				case <-goodSent:
				case <-time.After(5 * time.Second):
				}
				return http.StatusInternalServerError
			case "Good":
				once.Do(func() { close(goodSent) })
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if failedOnce(api, hookID.Load().(string)) {
						break
					}
				}
			}
			return http.StatusNoContent
		})
		id, _ := api.createHook(t, rcv.URL)
		hookID.Store(id)
		postPetNamed(t, api, "Poison")
		postPetNamed(t, api, "Good")
		waitDeliveries(t, api, id, func(ds []delivery) bool {
			done := 0
			for _, d := range ds {
				if d.Status == "failed" || d.Status == "delivered" {
					done++
				}
			}
			return len(ds) == 2 && done == 2
		})
		if list := api.do(t, get("/v1/webhooks")); !strings.Contains(list.body, `"disabled":false`) {
			t.Fatalf("list: got %s; want the endpoint enabled: a delivery succeeded after the failures began", list.body)
		}
		postPetNamed(t, api, "After")
		rcv.waitFor(t, 10*time.Second, "the next pet delivered", func(c []hookCall) bool { return names(t, c)["After"] })
	})
}

// failedOnce reports whether the endpoint id lists a delivery that failed an attempt with a
// 500, read through api's handler from any goroutine.
func failedOnce(api *testAPI, id string) bool {
	r := httptest.NewRequest(http.MethodGet, "/v1/webhooks/"+id+"/deliveries", nil)
	r.Header.Set("Authorization", "Bearer "+api.key)
	rec := httptest.NewRecorder()
	api.h.ServeHTTP(rec, r)
	var ds []delivery
	_ = json.Unmarshal(rec.Body.Bytes(), &ds)
	for _, d := range ds {
		if d.LastStatus != nil && *d.LastStatus == http.StatusInternalServerError {
			return true
		}
	}
	return false
}

// TestWebhookReplayHostileCursors sends replays whose cursor is a client's mistake or an
// attack: each is refused with 400 invalid_request, never a 5xx, in an answer of at most
// 1 KiB however long the cursor; a cursor past every pet queues nothing.
func TestWebhookReplayHostileCursors(t *testing.T) {
	forEachStore(t, func(t *testing.T, api *testAPI) {
		id, _ := api.createHook(t, publicURL)
		cursor := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		path := "/v1/webhooks/" + id + "/replay"
		for name, body := range map[string]string{
			"quotes":    `{"after":"` + strings.Repeat(`\"`, 400_000) + `"}`,
			"long":      `{"after":"` + strings.Repeat("A", 1<<20-64) + `"}`,
			"overflow":  `{"after":"` + cursor("pet:v1:99999999999999999999") + `"}`,
			"negative":  `{"after":"` + cursor("pet:v1:-1") + `"}`,
			"padded":    `{"after":"cGV0OnYxOjA="}`,
			"empty":     `{"after":""}`,
			"null":      `{"after":null}`,
			"number":    `{"after":5}`,
			"otherKind": `{"after":"` + cursor("doc:v1:1") + `"}`,
		} {
			resp := api.do(t, post(path, body))
			checkError(t, resp, http.StatusBadRequest, "invalid_request", "after")
			if len(resp.body) > 1024 {
				t.Errorf("%s: a refusal of %d bytes; want at most 1 KiB", name, len(resp.body))
			}
		}
		past := api.do(t, post(path, `{"after":"`+cursor("pet:v1:"+strconv.FormatInt(1<<63-1, 10))+`"}`))
		if past.status != http.StatusAccepted || past.body != `{"queued":0,"cursor":null,"more":false}` {
			t.Errorf("a cursor past every pet: got %d %s; want 202, none queued", past.status, past.body)
		}
	})
}

// TestWebhookDeadReceivers registers 20 endpoints whose receivers take every request and never
// answer, and adds 30 pets, 600 deliveries: the instance holds 512 of them in flight and no
// more, and POST /v1/pets answers at once meanwhile.
func TestWebhookDeadReceivers(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		cfg := hookConfig(time.Minute)
		cfg.Webhooks.Timeout = time.Minute
		api := newHookAPI(t, db, cfg)
		release := make(chan struct{})
		var inFlight, peak atomic.Int64
		for range 20 {
			rcv := newReceiverBy(t, func(event) int {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				<-release
				return http.StatusNoContent
			})
			api.createHook(t, rcv.URL)
		}
		t.Cleanup(func() { close(release) }) // before the receivers close, which waits for them
		for i := range 30 {
			postPetNamed(t, api, "Pet"+strconv.Itoa(i))
		}
		within(t, 15*time.Second, "512 deliveries in flight", func() bool { return inFlight.Load() >= 512 })
		for i := range 5 {
			start := time.Now()
			postPetNamed(t, api, "Meanwhile"+strconv.Itoa(i))
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("POST /v1/pets with 512 deliveries held: took %v; want an answer at once", took)
			}
		}
		if got := peak.Load(); got != 512 {
			t.Errorf("deliveries in flight at most: got %d; want 512", got)
		}
	})
}
