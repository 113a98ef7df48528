package e2e

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/app"
)

// TestWebhookRotation rotates an endpoint's secret: within the grace period every delivery
// carries two signatures, and the library verifies it with either secret.
func TestWebhookRotation(t *testing.T) {
	api := newHookAPI(t, dbtestSQLite(t), hookConfig(time.Second))
	rcv := newReceiver(t, nil)
	id, oldSecret := api.createHook(t, rcv.URL)
	resp := api.do(t, post("/v1/webhooks/"+id+"/secret", ""))
	if resp.status != http.StatusOK || !strings.Contains(resp.body, `"secret":"whsec_`) || strings.Contains(resp.body, oldSecret) {
		t.Fatalf("rotate: got %d %s; want 200 with a new secret", resp.status, resp.body)
	}
	newSecret := resp.body[strings.Index(resp.body, `"secret":"`)+10:]
	newSecret = newSecret[:strings.IndexByte(newSecret, '"')]
	api.do(t, post("/v1/pets", `{"name":"Rotated","categoryId":1}`))
	c := rcv.waitFor(t, 10*time.Second, "the delivery", func(c []hookCall) bool { return len(c) == 1 })[0]
	if sigs := strings.Fields(c.header.Get("webhook-signature")); len(sigs) != 2 {
		t.Errorf("webhook-signature: got %q; want two signatures", c.header.Get("webhook-signature"))
	}
	verify(t, newSecret, c)
	verify(t, oldSecret, c)
	wh, _ := standardwebhooks.NewWebhook(standardwebhooksOtherSecret)
	if err := wh.Verify(c.body, c.header); err == nil {
		t.Error("a third secret verifies the delivery; want it refused")
	}
	if list := api.do(t, get("/v1/webhooks")); strings.Contains(list.body, "whsec_") {
		t.Errorf("list after the rotation: got %s; want no secret", list.body)
	}
}

// standardwebhooksOtherSecret is a secret no endpoint has.
const standardwebhooksOtherSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestWebhookRebinding registers a name that resolves to a public address, then makes it
// resolve to a loopback one where a listener waits: the delivery is refused before any
// connection is made (the dialer's Control hook), and the listener is never reached. No
// connection ever leaves the loopback range: the public address is never dialed.
func TestWebhookRebinding(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	r := &testResolver{hosts: map[string]string{"rebind.test": "93.184.215.14"}}
	cfg := app.DefaultConfig()
	cfg.Webhooks.Schedule = []time.Duration{50 * time.Millisecond}
	api := newHookAPI(t, dbtestSQLite(t), cfg, app.WithResolver(r))
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	id, _ := api.createHook(t, "https://rebind.test:"+port+"/hooks")
	r.set("rebind.test", "127.0.0.1")
	api.do(t, post("/v1/pets", `{"name":"Rebound","categoryId":1}`))
	ds := waitDeliveries(t, api, id, func(ds []delivery) bool { return len(ds) == 1 && ds[0].Status == "failed" })
	if ds[0].LastStatus != nil || ds[0].Attempts != 2 {
		t.Errorf("delivery: got %+v; want 2 attempts without a status", ds[0])
	}
	resp := api.do(t, get("/v1/webhooks/"+id+"/deliveries"))
	if !strings.Contains(resp.body, "not public") {
		t.Errorf("deliveries: got %s; want the refusal as the last error", resp.body)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the loopback listener accepted %d connections; want none", n)
	}
}

// TestWebhookRedirectNotFollowed: a receiver that answers a delivery with a redirect to
// another address does not get that address a request (a redirect is a failed delivery, not
// a way past the address checks), whatever the status: 301, 302, 307 or 308.
func TestWebhookRedirectNotFollowed(t *testing.T) {
	api := newHookAPI(t, dbtestSQLite(t), hookConfig(time.Hour))
	target := newReceiver(t, nil)
	var redirected atomic.Int32
	codes := []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := redirected.Add(1)
		w.Header().Set("Location", target.URL+"/stolen")
		w.WriteHeader(codes[int(n-1)%len(codes)])
	}))
	defer redirector.Close()
	api.createHook(t, redirector.URL)
	for range codes {
		api.do(t, post("/v1/pets", `{"name":"Redirected","categoryId":1}`))
	}
	for deadline := time.Now().Add(10 * time.Second); redirected.Load() < int32(len(codes)); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the redirecting receiver got %d deliveries; want %d", redirected.Load(), len(codes))
		}
	}
	time.Sleep(500 * time.Millisecond) // a followed redirect would have reached the target by now
	if calls := target.snapshot(); len(calls) != 0 {
		t.Errorf("the redirect's target got %d requests; want none", len(calls))
	}
}
