package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/app"
	"petstore/graph"
	"petstore/testkit/dbtest"
)

// TestDocumentsLiveAttacks: under listed, no operation over WebSocket (graphql-transport-ws
// and graphql-ws) or SSE runs a text that is not a listed document's byte for byte (a listed
// subscription with a space appended, another operation, an id and a text together, an APQ
// hash of an unlisted text, a persisted-query extension without a hash); each gets the
// documented code; an SSE body over 1 MiB naming a document gets 413; and a listed
// subscription sent as its exact text runs.
func TestDocumentsLiveAttacks(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	listDocuments(t, db)
	cfg := app.DefaultConfig()
	cfg.GraphQL.DocumentsMode = string(graph.DocumentsListed)
	s := newLiveServer(t, db, nil, cfg, "business")
	listed := `subscription Added { petAdded { pet { id name } } }`
	attacks := map[string]struct{ payload, code string }{
		"space":     {`{"query":"` + listed + ` "}`, "QUERY_NOT_IN_SAFELIST"},
		"appended":  {`{"query":"` + listed + ` subscription B { petAdded { cursor } }","operationName":"B"}`, "QUERY_NOT_IN_SAFELIST"},
		"both":      {`{"query":"subscription { petAdded { cursor } }","extensions":{"documentId":"c0ffee"}}`, "INVALID_REQUEST"},
		"unknown":   {`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + strings.Repeat("ab", 32) + `"}}}`, "PERSISTED_QUERY_NOT_IN_LIST"},
		"no hash":   {`{"extensions":{"persistedQuery":{"version":1}}}`, "PERSISTED_QUERY_NOT_IN_LIST"},
		"upper hex": {`{"extensions":{"documentId":"SHA256:C0FFEE"}}`, "PERSISTED_QUERY_NOT_IN_LIST"},
	}

	w := s.connect(t, s.key)
	for id, a := range attacks {
		w.rawSend(`{"type":"subscribe","id":"` + id + `","payload":` + a.payload + `}`)
		m := w.read()
		for m.Type == "complete" {
			m = w.read()
		}
		if m.Type != "error" || m.ID != id || !strings.Contains(string(m.Payload), a.code) {
			t.Errorf("graphql-transport-ws, %s: %s %s %s; want an error with %s", id, m.Type, m.ID, m.Payload, a.code)
		}
	}

	legacy, br, err := rawLegacy(strings.TrimPrefix(s.url, "http://"), s.key)
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	for id, a := range attacks {
		writeFrame(legacy, `{"type":"start","id":"`+id+`","payload":`+a.payload+`}`)
		_ = legacy.SetReadDeadline(time.Now().Add(10 * time.Second))
		msg, err := readFrame(br)
		for err == nil && (strings.Contains(msg, `"ka"`) || strings.Contains(msg, `"complete"`)) {
			msg, err = readFrame(br)
		}
		if err != nil || !strings.Contains(msg, `"id":"`+id+`"`) || !strings.Contains(msg, a.code) {
			t.Errorf("graphql-ws, %s: %q %v; want an error with %s", id, msg, err, a.code)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sse := func(body string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/graphql", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for id, a := range attacks {
		resp := sse(a.payload)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"code":"`+a.code+`"`) || strings.Contains(string(b), `"petAdded"`) {
			t.Errorf("SSE, %s: %d %s; want an event with %s", id, resp.StatusCode, b, a.code)
		}
	}
	sseDoc := sse(`{"documentId":"c0ffee","query":"subscription { petAdded { cursor } }"}`)
	if b, _ := io.ReadAll(sseDoc.Body); !strings.Contains(string(b), `"code":"INVALID_REQUEST"`) {
		t.Errorf("SSE, a top-level documentId and a query: %s; want INVALID_REQUEST", b)
	}

	huge := sse(`{"documentId":"c0ffee","variables":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`) // read whole to move its documentId
	if b, _ := io.ReadAll(huge.Body); huge.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("SSE, a documentId in a body of 2 MiB: %d %.200s; want 413", huge.StatusCode, b)
	}

	// The listed subscription, sent as its exact text, runs on both.
	w.rawSend(`{"type":"subscribe","id":"listed","payload":{"query":"` + listed + `"}}`)
	events := sseEvents(sse(`{"query":"` + listed + `"}`).Body)
	s.waitActive(t, 2)
	s.createPet(t, s.key, "Listed", "")
	m := w.read()
	for m.Type == "complete" { // of the refused operations
		m = w.read()
	}
	if m.Type != "next" || m.ID != "listed" || !strings.Contains(string(m.Payload), `"name":"Listed"`) {
		t.Errorf("the listed text over WebSocket: %s %s %s; want its event", m.Type, m.ID, m.Payload)
	}
	for ev := range events {
		if strings.HasPrefix(ev, "next ") {
			if !strings.Contains(ev, `"name":"Listed"`) {
				t.Errorf("the listed text over SSE: %s; want its event", ev)
			}
			return
		}
	}
	t.Error("the listed text over SSE: no event")
}
