package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestWebhookDelivery creates pets through REST and GraphQL and checks that the receiver
// gets each, signed so that the Standard Webhooks library verifies it, with the pet and its
// cursor, and that the deliveries are listed as delivered.
func TestWebhookDelivery(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newHookAPI(t, db, hookConfig(time.Second))
		rcv := newReceiver(t, nil)
		id, secret := api.createHook(t, rcv.URL+"/hooks")
		if resp := api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":3}`)); resp.status != http.StatusCreated {
			t.Fatalf("create: got %d %s", resp.status, resp.body)
		}
		api.gql(t, `mutation { createPet(input: {name: "Tom", categoryId: 4}) { id } }`, nil)
		calls := rcv.waitFor(t, 10*time.Second, "both pets delivered", func(c []hookCall) bool { return len(c) >= 2 })
		if got := names(t, calls); !got["Rex"] || !got["Tom"] {
			t.Errorf("delivered: got %v; want Rex and Tom", got)
		}
		for _, c := range calls {
			verify(t, secret, c)
			ev := decodeEvent(t, c)
			if _, err := time.Parse(time.RFC3339, ev.Timestamp); err != nil || ev.Type != "pet.created" || ev.Data.Cursor == "" || ev.Data.Pet.ID == 0 {
				t.Errorf("body: got %s; want type pet.created, an RFC 3339 timestamp, a cursor and the pet", c.body)
			}
			if !strings.HasPrefix(c.header.Get("webhook-id"), "msg_") || c.header.Get("Content-Type") != "application/json" {
				t.Errorf("headers: got %v", c.header)
			}
		}
		waitDeliveries(t, api, id, func(ds []delivery) bool {
			return len(ds) == 2 && ds[0].Status == "delivered" && ds[1].Status == "delivered" && ds[0].Attempts == 1 && *ds[0].LastStatus == 200
		})
	})
}

// delivery is an item of GET /v1/webhooks/{webhookId}/deliveries.
type delivery struct {
	ID, Event, Cursor, Status string
	Attempts                  int
	LastStatus                *int
	NextAttemptAt             *string
}

// waitDeliveries waits until the endpoint's listed deliveries satisfy ok, and returns them.
func waitDeliveries(t *testing.T, api *testAPI, id string, ok func([]delivery) bool) []delivery {
	t.Helper()
	var ds []delivery
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp := api.do(t, get("/v1/webhooks/"+id+"/deliveries"))
		if resp.status != http.StatusOK {
			t.Fatalf("deliveries: got %d %s", resp.status, resp.body)
		}
		ds = nil
		if err := json.Unmarshal([]byte(resp.body), &ds); err != nil {
			t.Fatal(err)
		}
		if ok(ds) {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries: got %s", resp.body)
		}
	}
}

// TestWebhookRetries has the receiver down (503, then refusing connections is the same to
// the dispatcher) for its first answers: every pet is delivered once it is back, each with the
// same webhook-id on every attempt, and the listing counts the attempts.
func TestWebhookRetries(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newHookAPI(t, db, hookConfig(100*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond))
		rcv := newReceiver(t, func(n int) int {
			if n <= 6 {
				return http.StatusServiceUnavailable
			}
			return http.StatusNoContent
		})
		id, secret := api.createHook(t, rcv.URL)
		for _, name := range []string{"A", "B", "C"} {
			if resp := api.do(t, post("/v1/pets", `{"name":"`+name+`","categoryId":1}`)); resp.status != http.StatusCreated {
				t.Fatalf("create: got %d", resp.status)
			}
		}
		ds := waitDeliveries(t, api, id, func(ds []delivery) bool {
			for _, d := range ds {
				if d.Status != "delivered" {
					return false
				}
			}
			return len(ds) == 3
		})
		attempts := map[string]int{}
		for _, c := range rcv.snapshot() {
			verify(t, secret, c)
			attempts[c.header.Get("webhook-id")]++
		}
		for _, d := range ds {
			if attempts[d.ID] != d.Attempts || d.Attempts < 2 || *d.LastStatus != http.StatusNoContent || d.NextAttemptAt != nil {
				t.Errorf("delivery %s: listed %d attempts (last %v), the receiver saw %d; want the same, more than one", d.ID, d.Attempts, *d.LastStatus, attempts[d.ID])
			}
		}
		if len(attempts) != 3 {
			t.Errorf("webhook-ids: got %d; want one per pet", len(attempts))
		}
	})
}

// TestWebhookDisable has the receiver fail every attempt: each delivery fails once the
// schedule is spent, and the endpoint, failing for the whole schedule, is listed disabled;
// a replay enables it again and delivers.
func TestWebhookDisable(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newHookAPI(t, db, hookConfig(50*time.Millisecond, 50*time.Millisecond))
		var failing atomic.Bool
		failing.Store(true)
		rcv := newReceiver(t, func(int) int {
			if failing.Load() {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		id, _ := api.createHook(t, rcv.URL)
		resp := api.do(t, post("/v1/pets", `{"name":"Lost","categoryId":1}`))
		var pet struct{ ID int64 }
		_ = json.Unmarshal([]byte(resp.body), &pet)
		ds := waitDeliveries(t, api, id, func(ds []delivery) bool { return len(ds) == 1 && ds[0].Status == "failed" })
		if ds[0].Attempts != 3 || *ds[0].LastStatus != http.StatusInternalServerError {
			t.Errorf("failed delivery: %d attempts, last %d; want 3, 500", ds[0].Attempts, *ds[0].LastStatus)
		}
		list := api.do(t, get("/v1/webhooks"))
		if !strings.Contains(list.body, `"disabled":true`) || !strings.Contains(list.body, `"disabledAt"`) {
			t.Fatalf("list: got %s; want the endpoint disabled", list.body)
		}
		api.do(t, post("/v1/pets", `{"name":"Unsent","categoryId":1}`))
		time.Sleep(300 * time.Millisecond)
		if n := len(rcv.snapshot()); n != 3 {
			t.Errorf("requests to a disabled endpoint: got %d; want the 3 before it was disabled", n)
		}
		failing.Store(false)
		replay := api.do(t, post("/v1/webhooks/"+id+"/replay", `{"after":"cGV0OnYxOjA"}`))
		if replay.status != http.StatusAccepted || !strings.Contains(replay.body, `"queued":2`) {
			t.Fatalf("replay: got %d %s; want 202, 2 queued", replay.status, replay.body)
		}
		calls := rcv.waitFor(t, 10*time.Second, "the replay", func(c []hookCall) bool { return len(c) >= 5 })
		if got := names(t, calls[3:]); !got["Lost"] || !got["Unsent"] {
			t.Errorf("replayed: got %v; want Lost and Unsent", got)
		}
		if list := api.do(t, get("/v1/webhooks")); !strings.Contains(list.body, `"disabled":false`) {
			t.Errorf("list after the replay: got %s; want the endpoint enabled", list.body)
		}
	})
}
