package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"petstore/app"
	"petstore/auth"
	"petstore/live"
	"petstore/live/conns"
	"petstore/testkit/dbtest"
)

// TestWebSocketRateLimit: each operation on a socket is charged; over the limit the
// operation gets the protocol's error, before any event; SSE gets 429 with Retry-After.
func TestWebSocketRateLimit(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
	key, _, err := auth.CreateKey(context.Background(), db.DB, auth.PrefixFor(s.cfg.Env), auth.KeySpec{Plan: "enterprise", PerMinute: 2, PerDay: 100})
	if err != nil {
		t.Fatal(err)
	}
	awayFromMinuteEdge(t)
	w := s.connect(t, key) // the upgrade is anonymous: charged to the address
	w.subscribe("1", "")   // 1
	w.subscribe("2", "")   // 2
	w.subscribe("3", "")   // over
	m := w.read()          // one of the three, charged at once
	if m.Type != "error" || !strings.Contains(string(m.Payload), "RATE_LIMITED") {
		t.Fatalf("third operation: %s %s %s; want an error message with RATE_LIMITED", m.Type, m.ID, m.Payload)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := s.sseStream(t, ctx, key, "")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("SSE over the limit: %d %v; want 429 with Retry-After", resp.StatusCode, resp.Header)
	}
}

// TestWebSocketRefusedOperationsAreCharged: every operation sent on a WebSocket is charged
// before it is parsed, refused ones too (documents that do not parse, validate or pass the
// cost bound): the key's budget drops, it gets RATE_LIMITED once over, and can be suspended;
// a socket that sends conns.MaxRefusedInRow refused operations in a row is closed with 4400.
func TestWebSocketRefusedOperationsAreCharged(t *testing.T) {
	t.Parallel()
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, app.DefaultConfig(), "free")
	awayFromMinuteEdge(t)

	t.Run("charged, then closed", func(t *testing.T) {
		minute := time.Now().Minute()
		w := s.connect(t, s.key) // the socket is charged to the key at connection_init
		codes, code, reason := sendRefused(t, w, conns.MaxRefusedInRow)
		if code != live.CloseBadRequest || reason == "" {
			t.Fatalf("close %d %q after %d refusals; want %d with a reason", code, reason, len(codes), live.CloseBadRequest)
		}
		for i, c := range codes {
			if c != "INVALID_REQUEST" {
				t.Fatalf("refusal %d: %s; want INVALID_REQUEST", i, c)
			}
		}
		status, left, _ := s.remaining(t, s.key)
		if want := int(auth.Free.PerMinute) - 1 - conns.MaxRefusedInRow - 1; status != http.StatusOK || (left != want && time.Now().Minute() == minute) {
			t.Fatalf("after %d refused operations: %d, %d left; want 200 with %d left (each charged)", conns.MaxRefusedInRow, status, left, want)
		}
	})

	t.Run("an admitted operation ends the run", func(t *testing.T) {
		w := s.connect(t, s.key)
		p, _ := json.Marshal(map[string]any{"query": "{ pets { id } }"})
		for range 2 {
			if codes := sendRefusedOpen(t, w, conns.MaxRefusedInRow-1); len(codes) != conns.MaxRefusedInRow-1 {
				t.Fatalf("got %d refusals", len(codes))
			}
			w.send(wsMsg{Type: "subscribe", ID: "q", Payload: p})
			if m := w.read(); m.Type != "next" || !strings.Contains(string(m.Payload), `"pets"`) {
				t.Fatalf("got %+v; want the pets", m)
			}
			if m := w.read(); m.Type != "complete" {
				t.Fatalf("got %+v; want complete", m)
			}
		}
	})

	t.Run("rate limited, then suspended", func(t *testing.T) {
		key, _, err := auth.CreateKey(context.Background(), s.db.DB, auth.PrefixFor(s.cfg.Env), auth.KeySpec{Plan: "enterprise", PerMinute: 2, PerDay: 1000})
		if err != nil {
			t.Fatal(err)
		}
		// The first socket's connection_init and first operation take the 2; its 9 other
		// operations are rate limited; then each connection_init is refused (4429), until the
		// 20th rejection suspends the key (then 4403, or KEY_SUSPENDED).
		count := map[string]int{}
		for range 15 {
			c, err := s.open(key, false)
			if err != nil {
				count[err.Error()[:len("close 4429")]]++
				if strings.HasPrefix(err.Error(), fmt.Sprintf("close %d", live.CloseForbidden)) {
					break
				}
				continue
			}
			codes, code, _ := sendRefused(t, &wsClient{t: t, c: c}, conns.MaxRefusedInRow)
			for _, c := range codes {
				count[c]++
			}
			if code != live.CloseBadRequest && code != live.CloseForbidden { // the suspension's cut-off may come first
				t.Fatalf("close %d; want %d", code, live.CloseBadRequest)
			}
			if count["KEY_SUSPENDED"] > 0 {
				break
			}
		}
		if count["RATE_LIMITED"] < conns.MaxRefusedInRow-1 || count["KEY_SUSPENDED"]+count[fmt.Sprintf("close %d", live.CloseForbidden)] == 0 {
			t.Fatalf("refusals by code: %v; want RATE_LIMITED once over the 2 a minute, then KEY_SUSPENDED or close %d", count, live.CloseForbidden)
		}
		if status, _, body := s.remaining(t, key); status != http.StatusTooManyRequests || !strings.Contains(body, "key_suspended") {
			t.Fatalf("after: %d %s; want 429 key_suspended", status, body)
		}
	})
}

// refusedDocuments are operations that are refused before they run: one that does not parse,
// one that does not validate, one over the cost bound (5 × 401 > 2,000) and a subscription of
// two root fields.
var refusedDocuments = []string{
	`{ pets { id `,
	`{ nope }`,
	`{ a: pets(limit: 100) { id name categoryId status } b: pets(limit: 100) { id name categoryId status }
	   c: pets(limit: 100) { id name categoryId status } d: pets(limit: 100) { id name categoryId status }
	   e: pets(limit: 100) { id name categoryId status } }`,
	`subscription { a: petAdded { cursor } b: petAdded { cursor } }`,
}

// sendRefused sends n refused documents on w and returns the code of the error message each
// got until the socket closed, and the close code and reason.
func sendRefused(t *testing.T, w *wsClient, n int) (codes []string, close websocket.StatusCode, reason string) {
	t.Helper()
	for i := range n {
		p, _ := json.Marshal(map[string]any{"query": refusedDocuments[i%len(refusedDocuments)]})
		w.send(wsMsg{Type: "subscribe", ID: strconv.Itoa(i), Payload: p})
	}
	for {
		m, err := w.readErr(10 * time.Second)
		if err != nil {
			var ce websocket.CloseError
			if !asCloseError(err, &ce) {
				t.Fatalf("after %d refusals: %v; want a close", len(codes), err)
			}
			return codes, ce.Code, ce.Reason
		}
		switch m.Type {
		case "complete":
		case "error":
			var errs []struct {
				Extensions struct{ Code string }
			}
			if err := json.Unmarshal(m.Payload, &errs); err != nil || len(errs) == 0 {
				t.Fatalf("operation %s: %s; want its errors", m.ID, m.Payload)
			}
			codes = append(codes, errs[0].Extensions.Code)
		default:
			t.Fatalf("got %s %s %s; want the refusals and a close", m.Type, m.ID, m.Payload)
		}
	}
}

// sendRefusedOpen sends n refused documents on w and reads their answers; the socket stays
// open.
func sendRefusedOpen(t *testing.T, w *wsClient, n int) []string {
	t.Helper()
	var codes []string
	for i := range n {
		p, _ := json.Marshal(map[string]any{"query": refusedDocuments[i%len(refusedDocuments)]})
		w.send(wsMsg{Type: "subscribe", ID: strconv.Itoa(i), Payload: p})
		for done := false; !done; {
			switch m := w.read(); m.Type {
			case "complete":
				done = true
			case "error":
				codes = append(codes, m.Type)
			default:
				t.Fatalf("got %s %s %s; want a refusal", m.Type, m.ID, m.Payload)
			}
		}
	}
	return codes
}

// remaining returns the X-RateLimit-Remaining of a request with key (which it charges).
func (s *liveServer) remaining(t *testing.T, key string) (int, int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/pets", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n, _ := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
	return resp.StatusCode, n, string(b)
}

// TestPersistedQueryHashesAreCharged: operations that name only a persisted query's hash (one
// the server does not know, and so answers PERSISTED_QUERY_NOT_FOUND without parsing anything)
// are charged to the key like any other operation, and count among the refusals in a row.
func TestPersistedQueryHashesAreCharged(t *testing.T) {
	t.Parallel()
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, app.DefaultConfig(), "free")
	awayFromMinuteEdge(t)
	_, before, _ := s.remaining(t, s.key)
	w := s.connect(t, s.key)
	for i := range conns.MaxRefusedInRow {
		w.rawSend(`{"type":"subscribe","id":"` + string(rune('a'+i)) + `","payload":{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` +
			strings.Repeat("ab", 32) + `"}}}}`)
	}
	code, msgs := w.closeWithin(5 * time.Second)
	if code != live.CloseBadRequest {
		t.Fatalf("after %d hash-only operations: close %d, %d messages; want %d", conns.MaxRefusedInRow, code, len(msgs), live.CloseBadRequest)
	}
	// One request for the socket, one for each operation, one for this check.
	if _, after, _ := s.remaining(t, s.key); before-after != conns.MaxRefusedInRow+2 {
		t.Fatalf("budget %d -> %d; want %d spent", before, after, conns.MaxRefusedInRow+2)
	}
}
