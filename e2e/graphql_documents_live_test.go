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
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestDocumentsOverWebSocketAndSSE: under ids, an operation sent as text over WebSocket (both
// protocols) or SSE is refused with PERSISTED_QUERY_ID_REQUIRED (the safelist holds on every
// transport), and a listed subscription named by extensions.documentId or its APQ hash runs;
// an unknown id is refused.
func TestDocumentsOverWebSocketAndSSE(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	listDocuments(t, db)
	cfg := app.DefaultConfig()
	cfg.GraphQL.DocumentsMode = string(graph.DocumentsIDs)
	s := newLiveServer(t, db, nil, cfg, "business")

	w := s.connect(t, s.key)
	read := func() wsMsg { // the next message but the completes of refused operations
		m := w.read()
		for m.Type == "complete" {
			m = w.read()
		}
		return m
	}
	for id, payload := range map[string]string{
		"text":    `{"query":"subscription { petAdded { pet { id } } }"}`,
		"listed":  `{"query":"subscription Added { petAdded { pet { id name } } }"}`,
		"unknown": `{"extensions":{"documentId":"nope"}}`,
	} {
		w.rawSend(`{"type":"subscribe","id":"` + id + `","payload":` + payload + `}`)
		m := read()
		want := "PERSISTED_QUERY_ID_REQUIRED"
		if id == "unknown" {
			want = "PERSISTED_QUERY_NOT_IN_LIST"
		}
		if m.Type != "error" || m.ID != id || !strings.Contains(string(m.Payload), want) {
			t.Fatalf("%s over WebSocket: %s %s %s; want an error with %s", id, m.Type, m.ID, m.Payload, want)
		}
	}
	w.rawSend(`{"type":"subscribe","id":"by-id","payload":{"extensions":{"documentId":"c0ffee"}}}`)
	w.rawSend(`{"type":"subscribe","id":"by-hash","payload":{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"c0ffee"}}}}`)
	s.waitActive(t, 2)
	s.createPet(t, s.key, "Listed", "")
	got := map[string]bool{}
	for range 2 {
		m := read()
		if m.Type != "next" || !strings.Contains(string(m.Payload), `"name":"Listed"`) {
			t.Fatalf("listed subscription: %s %s %s; want its event", m.Type, m.ID, m.Payload)
		}
		got[m.ID] = true
	}
	if !got["by-id"] || !got["by-hash"] {
		t.Fatalf("events for %v; want by-id and by-hash", got)
	}

	legacy, br, err := rawLegacy(strings.TrimPrefix(s.url, "http://"), s.key) // graphql-ws
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	writeFrame(legacy, `{"type":"start","id":"1","payload":{"query":"{ pets { id } }"}}`)
	_ = legacy.SetReadDeadline(time.Now().Add(10 * time.Second))
	msg, err := readFrame(br)
	for err == nil && strings.Contains(msg, `"ka"`) { // graphql-ws keep-alives
		msg, err = readFrame(br)
	}
	if err != nil || !strings.Contains(msg, "PERSISTED_QUERY_ID_REQUIRED") {
		t.Fatalf("text over graphql-ws: %q %v; want PERSISTED_QUERY_ID_REQUIRED", msg, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp := s.sseStream(t, ctx, s.key, "")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"code":"PERSISTED_QUERY_ID_REQUIRED"`) || strings.Contains(string(b), `"petAdded"`) {
		t.Fatalf("text over SSE: %d %s; want PERSISTED_QUERY_ID_REQUIRED", resp.StatusCode, b)
	}

	// A listed subscription over SSE, named by a top-level documentId as GraphQL over HTTP names it.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/graphql", strings.NewReader(`{"documentId":"c0ffee","extensions":{}}`))
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := sseEvents(stream.Body)
	s.waitActive(t, 3)
	s.createPet(t, s.key, "Streamed", "")
	for ev := range events {
		if strings.HasPrefix(ev, "next ") {
			if !strings.Contains(ev, `"name":"Streamed"`) {
				t.Fatalf("listed subscription over SSE by documentId: %s; want the pet added", ev)
			}
			return
		}
	}
	t.Fatal("listed subscription over SSE by documentId: no event")
}

// TestDocumentsSharedByInstances: two instances on one MySQL database run a document that
// documents add lists after they started, within the refresh interval, and refuse it once
// documents remove took it away; neither restarts.
func TestDocumentsSharedByInstances(t *testing.T) {
	t.Parallel()
	dsn := dbtest.DSN(t, "mysql")
	var insts []*liveServer
	for range 2 {
		db, err := store.Open(context.Background(), dsn, store.DefaultPool)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		if _, err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		cfg := app.DefaultConfig()
		cfg.GraphQL.DocumentsMode = string(graph.DocumentsIDs)
		s := newLiveServer(t, db, nil, cfg, "business")
		t.Cleanup(s.svc.Background(context.Background()))
		insts = append(insts, s)
	}
	status := func(s *liveServer) int {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/graphql", strings.NewReader(`{"documentId":"list-pets"}`))
		req.Header.Set("Authorization", "Bearer "+s.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for i, s := range insts {
		if got := status(s); got != http.StatusNotFound {
			t.Fatalf("instance %d before documents add: %d; want 404", i, got)
		}
	}
	if out, err := runCmd(t, dsn, "documents", "add", writeManifest(t, "apollo.json", apolloListed)); err != nil {
		t.Fatalf("documents add: %v\n%s", err, out)
	}
	for _, s := range insts {
		within(t, 10*time.Second, "the instance runs the added document", func() bool { return status(s) == http.StatusOK })
	}
	if _, err := runCmd(t, dsn, "documents", "remove", "list-pets"); err != nil {
		t.Fatal(err)
	}
	for _, s := range insts {
		within(t, 10*time.Second, "the instance refuses the removed document", func() bool { return status(s) == http.StatusNotFound })
	}
}
