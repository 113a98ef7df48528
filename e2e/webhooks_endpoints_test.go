package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"petstore/apierr"
	"petstore/app"
	"petstore/auth"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// publicURL is a receiver at a public address literal: registering it resolves nothing and
// connects nowhere.
const publicURL = "https://93.184.215.14/hooks"

// TestWebhookEndpoints registers, lists and deletes endpoints through /v1/webhooks: the
// secret is shown once, another key neither sees, rotates, lists the deliveries of, replays
// nor deletes them, and bad input gets the Error body.
func TestWebhookEndpoints(t *testing.T) {
	forEachStore(t, func(t *testing.T, api *testAPI) {
		resp := api.do(t, post("/v1/webhooks", `{"url":"`+publicURL+`","events":["pet.created","pet.created"]}`))
		if resp.status != http.StatusCreated {
			t.Fatalf("create: got %d %s; want 201", resp.status, resp.body)
		}
		var created struct {
			ID, URL, Secret, CreatedAt string
			Events                     []string
		}
		if err := json.Unmarshal([]byte(resp.body), &created); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(created.Secret, "whsec_") || created.URL != publicURL || len(created.Events) != 1 || created.CreatedAt == "" {
			t.Errorf("create: got %s; want the url, one event, a createdAt and a whsec_ secret", resp.body)
		}
		if loc := resp.header.Get("Location"); loc != "/v1/webhooks/"+created.ID {
			t.Errorf("Location: got %q; want /v1/webhooks/%s", loc, created.ID)
		}
		list := api.do(t, get("/v1/webhooks"))
		if list.status != http.StatusOK || !strings.Contains(list.body, created.ID) || strings.Contains(list.body, "whsec_") {
			t.Errorf("list: got %d %s; want the endpoint without its secret", list.status, list.body)
		}

		other := *api
		other.key = api.createKey(t, auth.KeySpec{Plan: auth.Pro.Name})
		if resp := other.do(t, get("/v1/webhooks")); resp.status != http.StatusOK || resp.body != "[]" {
			t.Errorf("another key's list: got %d %s; want []", resp.status, resp.body)
		}
		for _, req := range []request{{method: http.MethodDelete, path: "/v1/webhooks/" + created.ID},
			post("/v1/webhooks/"+created.ID+"/secret", ""), get("/v1/webhooks/" + created.ID + "/deliveries"),
			post("/v1/webhooks/"+created.ID+"/replay", `{"after":"cGV0OnYxOjA"}`)} {
			checkError(t, other.do(t, req), http.StatusNotFound, apierr.NotFound, created.ID)
		}

		if resp := api.do(t, request{method: http.MethodDelete, path: "/v1/webhooks/" + created.ID}); resp.status != http.StatusNoContent {
			t.Errorf("delete: got %d %s; want 204", resp.status, resp.body)
		}
		if resp := api.do(t, get("/v1/webhooks")); resp.body != "[]" {
			t.Errorf("list after delete: got %s; want []", resp.body)
		}
		checkError(t, api.do(t, request{method: http.MethodDelete, path: "/v1/webhooks/" + created.ID}), http.StatusNotFound, apierr.NotFound, created.ID)
	})
}

// TestWebhookEndpointsRefuseBadInput checks the Error body of each kind of bad registration.
func TestWebhookEndpointsRefuseBadInput(t *testing.T) {
	api := newTestAPI(t, dbtestSQLite(t))
	tests := []struct{ name, body, word string }{
		{"no url", `{"events":["pet.created"]}`, "url is required"},
		{"not a url", `{"url":"hooks","events":["pet.created"]}`, "absolute https URL"},
		{"http", `{"url":"http://93.184.215.14/hooks","events":["pet.created"]}`, "https"},
		{"loopback", `{"url":"https://127.0.0.1/hooks","events":["pet.created"]}`, "not public"},
		{"private", `{"url":"https://10.1.2.3/hooks","events":["pet.created"]}`, "not public"},
		{"metadata", `{"url":"https://169.254.169.254/latest","events":["pet.created"]}`, "not public"},
		{"ipv6 loopback", `{"url":"https://[::1]/hooks","events":["pet.created"]}`, "not public"},
		{"credentials", `{"url":"https://u:p@93.184.215.14/hooks","events":["pet.created"]}`, "credentials"},
		{"no events", `{"url":"` + publicURL + `","events":[]}`, "events is required"},
		{"unknown event", `{"url":"` + publicURL + `","events":["pet.sold"]}`, "pet.sold"},
		{"url not a string", `{"url":5,"events":["pet.created"]}`, "url"},
		{"malformed", `{"url":`, "JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkError(t, api.do(t, post("/v1/webhooks", tt.body)), http.StatusBadRequest, apierr.InvalidRequest, tt.word)
		})
	}
}

// TestWebhookEndpointsPlanLimit registers as many endpoints as each plan allows, and one more.
func TestWebhookEndpointsPlanLimit(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newTestAPI(t, db)
		for plan, limit := range map[string]int{auth.Free.Name: 1, auth.Pro.Name: 5} {
			api.key = api.createKey(t, auth.KeySpec{Plan: plan})
			for range limit {
				api.createHook(t, publicURL)
			}
			checkError(t, api.do(t, post("/v1/webhooks", `{"url":"`+publicURL+`","events":["pet.created"]}`)),
				http.StatusBadRequest, apierr.InvalidRequest, "limit")
		}
	})
}

// TestWebhookEndpointsResolvedAddresses registers urls whose names the test resolver answers
// with private and metadata addresses: refused, without any DNS traffic or connection.
func TestWebhookEndpointsResolvedAddresses(t *testing.T) {
	r := &testResolver{hosts: map[string]string{"metadata.test": "169.254.169.254", "private.test": "192.168.1.10",
		"cgnat.test": "100.100.100.200", "mapped.test": "::ffff:127.0.0.1", "public.test": "93.184.215.14"}}
	api := newHookAPI(t, dbtestSQLite(t), app.DefaultConfig(), app.WithResolver(r))
	for _, host := range []string{"metadata.test", "private.test", "cgnat.test", "mapped.test"} {
		checkError(t, api.do(t, post("/v1/webhooks", `{"url":"https://`+host+`/hooks","events":["pet.created"]}`)),
			http.StatusBadRequest, apierr.InvalidRequest, "not public")
	}
	checkError(t, api.do(t, post("/v1/webhooks", `{"url":"https://unknown.test/hooks","events":["pet.created"]}`)),
		http.StatusBadRequest, apierr.InvalidRequest, "does not resolve")
	api.createHook(t, "https://public.test/hooks")
}
