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

	"petstore/auth"
	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/live"
)

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

// TestWebSocketRefusedOperationsAreCharged: every operation sent on a WebSocket is charged
// before it is parsed, refused ones too (documents that do not parse, validate or pass the
// cost bound): the key's budget drops, it gets RATE_LIMITED once over, and can be suspended;
// a socket that sends live.MaxRefusedInRow refused operations in a row is closed with 4400.
func TestWebSocketRefusedOperationsAreCharged(t *testing.T) {
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, config.Default(), "free")

	t.Run("charged, then closed", func(t *testing.T) {
		minute := time.Now().Minute()
		w := s.connect(t, s.key) // the socket is charged to the key at connection_init
		codes, code, reason := sendRefused(t, w, live.MaxRefusedInRow)
		if code != live.CloseBadRequest || reason == "" {
			t.Fatalf("close %d %q after %d refusals; want %d with a reason", code, reason, len(codes), live.CloseBadRequest)
		}
		for i, c := range codes {
			if c != "INVALID_REQUEST" {
				t.Fatalf("refusal %d: %s; want INVALID_REQUEST", i, c)
			}
		}
		status, left, _ := s.remaining(t, s.key)
		if want := int(auth.Free.PerMinute) - 1 - live.MaxRefusedInRow - 1; status != http.StatusOK || (left != want && time.Now().Minute() == minute) {
			t.Fatalf("after %d refused operations: %d, %d left; want 200 with %d left (each charged)", live.MaxRefusedInRow, status, left, want)
		}
	})

	t.Run("an admitted operation ends the run", func(t *testing.T) {
		w := s.connect(t, s.key)
		p, _ := json.Marshal(map[string]any{"query": "{ pets { id } }"})
		for range 2 {
			if codes := sendRefusedOpen(t, w, live.MaxRefusedInRow-1); len(codes) != live.MaxRefusedInRow-1 {
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
		key, _, err := auth.CreateKey(context.Background(), s.db.DB, s.cfg.KeyPrefix(), auth.KeySpec{Plan: "enterprise", PerMinute: 2, PerDay: 1000})
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
			codes, code, _ := sendRefused(t, &wsClient{t: t, c: c}, live.MaxRefusedInRow)
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
		if count["RATE_LIMITED"] < live.MaxRefusedInRow-1 || count["KEY_SUSPENDED"]+count[fmt.Sprintf("close %d", live.CloseForbidden)] == 0 {
			t.Fatalf("refusals by code: %v; want RATE_LIMITED once over the 2 a minute, then KEY_SUSPENDED or close %d", count, live.CloseForbidden)
		}
		if status, _, body := s.remaining(t, key); status != http.StatusTooManyRequests || !strings.Contains(body, "key_suspended") {
			t.Fatalf("after: %d %s; want 429 key_suspended", status, body)
		}
	})
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

// protoClient is a WebSocket client of either protocol, reading on a goroutine of its own
// (which answers ping frames).
type protoClient struct {
	t    *testing.T
	c    *websocket.Conn
	msgs chan wsMsg
	err  chan error
}

// dialProtocol opens a WebSocket naming subprotocol ("" for none) and initialises it with key.
func (s *liveServer) dialProtocol(t *testing.T, subprotocol, key string) *protoClient {
	t.Helper()
	opts := &websocket.DialOptions{}
	if subprotocol != "" {
		opts.Subprotocols = []string{subprotocol}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/v1/graphql", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	p := &protoClient{t: t, c: c, msgs: make(chan wsMsg, 100), err: make(chan error, 1)}
	go func() {
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				p.err <- err
				return
			}
			var m wsMsg
			_ = json.Unmarshal(b, &m)
			p.msgs <- m
		}
	}()
	p.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + key + `"}}`)
	if m := p.read(); m.Type != "connection_ack" {
		t.Fatalf("after connection_init: %+v; want connection_ack", m)
	}
	return p
}

func (p *protoClient) send(msg string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

// read returns the next message but keep-alives (ka).
func (p *protoClient) read() wsMsg {
	p.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-p.msgs:
			if m.Type != "ka" {
				return m
			}
		case err := <-p.err:
			p.t.Fatalf("read: %v", err)
		case <-timeout:
			p.t.Fatal("no message in 10 s")
		}
	}
}

// closed waits for the server's close and returns its code and reason.
func (p *protoClient) closed() (websocket.StatusCode, string) {
	p.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case <-p.msgs:
		case err := <-p.err:
			var ce websocket.CloseError
			if !asCloseError(err, &ce) {
				p.t.Fatalf("want a close; got %v", err)
			}
			return ce.Code, ce.Reason
		case <-timeout:
			p.t.Fatal("not closed in 10 s")
		}
	}
}

// operation returns the message that starts operation id with query on subprotocol.
func operation(subprotocol, id, query string) string {
	typ := "subscribe"
	if subprotocol != "graphql-transport-ws" {
		typ = "start"
	}
	p, _ := json.Marshal(map[string]any{"query": query})
	b, _ := json.Marshal(wsMsg{Type: typ, ID: id, Payload: p})
	return string(b)
}

// TestWebSocketProtocolViolations: on both protocols, a second subscribe (start) with the id
// of an active operation closes the socket with 4409, a second connection_init with 4429 and
// a message of the other protocol with 4400; an id may be used again once its operation
// completed; a subscription selecting several root fields gets an error message.
func TestWebSocketProtocolViolations(t *testing.T) {
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, config.Default(), "business")
	const petAdded = `subscription { petAdded { pet { name } } }`
	for _, proto := range []string{"graphql-transport-ws", "graphql-ws"} {
		legacy := proto != "graphql-transport-ws"
		stop, event, foreign := "complete", "next", `{"type":"start","id":"9","payload":{"query":"{ pets { id } }"}}`
		if legacy {
			stop, event, foreign = "stop", "data", `{"type":"subscribe","id":"9","payload":{"query":"{ pets { id } }"}}`
		}
		t.Run(proto, func(t *testing.T) {
			t.Run("id already active", func(t *testing.T) {
				p := s.dialProtocol(t, proto, s.key)
				p.send(operation(proto, "1", petAdded))
				p.send(operation(proto, "1", petAdded))
				if code, reason := p.closed(); code != live.CloseDuplicateID || !strings.Contains(reason, "1") {
					t.Fatalf("close %d %q; want %d naming the id", code, reason, live.CloseDuplicateID)
				}
			})
			t.Run("id used again once completed", func(t *testing.T) {
				p := s.dialProtocol(t, proto, s.key)
				p.send(operation(proto, "1", petAdded))
				time.Sleep(200 * time.Millisecond) // subscribed: a stop during the subscription's first read fails it (INTERNAL_ERROR)
				p.send(`{"type":"` + stop + `","id":"1"}`)
				if m := p.read(); m.Type != "complete" || m.ID != "1" {
					t.Fatalf("after %s: %+v; want complete of 1", stop, m)
				}
				p.send(operation(proto, "1", petAdded))
				time.Sleep(100 * time.Millisecond)
				s.createPet(t, s.key, "Again", "")
				if m := p.read(); m.Type != event || m.ID != "1" || !strings.Contains(string(m.Payload), "Again") {
					t.Fatalf("got %s %s %s; want the event of 1", m.Type, m.ID, m.Payload)
				}
			})
			t.Run("second connection_init", func(t *testing.T) {
				p := s.dialProtocol(t, proto, s.key)
				p.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + s.key + `"}}`)
				if code, _ := p.closed(); code != live.CloseInitAgain {
					t.Fatalf("close %d; want %d", code, live.CloseInitAgain)
				}
			})
			t.Run("the other protocol's message", func(t *testing.T) {
				p := s.dialProtocol(t, proto, s.key)
				p.send(foreign)
				if code, reason := p.closed(); code != live.CloseBadRequest || reason == "" {
					t.Fatalf("close %d %q; want %d with a reason", code, reason, live.CloseBadRequest)
				}
			})
			t.Run("several root fields", func(t *testing.T) {
				p := s.dialProtocol(t, proto, s.key)
				p.send(operation(proto, "1", `subscription { a: petAdded { cursor } b: petAdded { cursor } }`))
				if m := p.read(); m.Type != "error" || m.ID != "1" || !strings.Contains(string(m.Payload), "INVALID_REQUEST") {
					t.Fatalf("got %s %s %s; want an error message", m.Type, m.ID, m.Payload)
				}
			})
		})
	}
}

// TestKeepAliveWithoutSubprotocol: with PETSTORE_WS_PING_INTERVAL at 200 ms, a socket that
// names no subprotocol, which gqlgen serves as graphql-ws, gets that protocol's keep-alive (ka)
// and no ping message it cannot answer, stays open and gets its events.
func TestKeepAliveWithoutSubprotocol(t *testing.T) {
	cfg := config.Default()
	cfg.WSPingInterval = 200 * time.Millisecond
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, cfg, "business")
	p := s.dialProtocol(t, "", s.key)
	p.send(operation("", "1", `subscription { petAdded { pet { name } } }`))
	kas := 0
	for deadline := time.After(2 * time.Second); kas >= 0; { // ten rounds of pings
		select {
		case m := <-p.msgs:
			if m.Type != "ka" {
				t.Fatalf("got %+v; want only keep-alives", m)
			}
			kas++
		case err := <-p.err:
			t.Fatalf("closed after %d keep-alives: %v", kas, err)
		case <-deadline:
			if kas < 5 {
				t.Fatalf("%d keep-alives in 2 s; want one every 200 ms", kas)
			}
			kas = -1
		}
	}
	s.createPet(t, s.key, "Rex", "")
	if m := p.read(); m.Type != "data" || !strings.Contains(string(m.Payload), "Rex") {
		t.Fatalf("got %s %s %s; want the event", m.Type, m.ID, m.Payload)
	}
}
