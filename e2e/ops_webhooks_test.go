package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/testkit/dbtest"
)

// TestWebhooksTwoInstancesSIGKILL runs two instances on one MySQL database, a receiver that
// is down (503) for the first second and a half, and POSTs pets to both; mid-stream one
// instance is killed with SIGKILL. Every pet whose POST answered 201 must reach the receiver,
// signed (verified with the Standard Webhooks library), each pet under one webhook-id
// whatever the attempts and instances that sent it: the killed instance's committed outbox
// rows and claimed deliveries are sent by the other.
func TestWebhooksTwoInstancesSIGKILL(t *testing.T) {
	dsn := dbtest.DSN(t, "mysql")
	key := clusterKey(t, dsn)
	ports := freePorts(t, 2)
	env := append(clusterEnv(dsn), "PETSTORE_WEBHOOK_ALLOW_PRIVATE=true", "PETSTORE_WEBHOOK_TIMEOUT=1s",
		"PETSTORE_WEBHOOK_RETRY_SCHEDULE=200ms,500ms,1s,1s,1s,1s,1s,1s")
	a := startInstance(t, 0, ports[0], env)
	startInstance(t, 1, ports[1], env)
	bases := []string{fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])}
	for _, base := range bases {
		waitHealthy(t, base)
	}
	up := time.Now().Add(1500 * time.Millisecond)
	rcv := newReceiver(t, func(int) int {
		if time.Now().Before(up) {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	secret := registerHook(t, bases[0], key, rcv.URL)

	var killed atomic.Bool
	acked, stop := loadUntil(4, func(w, i int) (int64, bool) {
		base := bases[(w+i)%2]
		if killed.Load() {
			base = bases[1]
		}
		return postPet(base, key, fmt.Sprintf("w%d-%d", w, i))
	})
	time.Sleep(time.Second)
	killed.Store(true)
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := acked()
	time.Sleep(time.Second)
	ids := stop()

	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var calls []hookCall
	rcv.waitFor(t, 60*time.Second, "every acknowledged pet delivered", func(c []hookCall) bool {
		calls = c
		got := map[int64]bool{}
		for _, call := range c {
			if call.header.Get("webhook-id") != "" && len(call.body) > 0 {
				got[decodeEvent(t, call).Data.Pet.ID] = true
			}
		}
		for id := range want {
			if !got[id] {
				return false
			}
		}
		return true
	})
	msgIDs, sent := map[int64]map[string]bool{}, map[string]int{}
	for _, c := range calls {
		verify(t, secret, c)
		id := decodeEvent(t, c).Data.Pet.ID
		if msgIDs[id] == nil {
			msgIDs[id] = map[string]bool{}
		}
		msgIDs[id][c.header.Get("webhook-id")] = true
		sent[c.header.Get("webhook-id")]++
	}
	for id, ms := range msgIDs {
		if len(ms) != 1 {
			t.Errorf("pet %d: got webhook-ids %v; want one", id, ms)
		}
	}
	t.Logf("%d pets acknowledged (%d before the SIGKILL), %d requests to the receiver for %d webhook-ids",
		len(want), killedAt, len(calls), len(sent))
}

// registerHook registers url for pet.created through base with key, and returns its secret.
func registerHook(t *testing.T, base, key, url string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/webhooks", strings.NewReader(`{"url":"`+url+`","events":["pet.created"]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Secret string }
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: got %d, %v", resp.StatusCode, err)
	}
	return e.Secret
}
