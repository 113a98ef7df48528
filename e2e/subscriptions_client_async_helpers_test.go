package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// capsClient is a graphql-transport-ws client whose messages a goroutine reads, so that waiting
// for none leaves the socket open (coder/websocket closes a socket whose read's context ends).
type capsClient struct {
	*wsClient
	msgs chan wsMsg // closed when the socket is
	err  error      // why the socket closed, once msgs is
}

// connectKey opens a WebSocket with key in the upgrade's Authorization header (so that the
// upgrade is charged to the key, not to the test's address) and initialises it.
func (s *liveServer) connectKey(t *testing.T, key string) *capsClient {
	t.Helper()
	w, err := s.dial(t, http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	w.send(wsMsg{Type: "connection_init"})
	if m := w.read(); m.Type != "connection_ack" {
		t.Fatalf("after connection_init: got %+v; want connection_ack", m)
	}
	c := &capsClient{wsClient: w, msgs: make(chan wsMsg, 64)}
	go func() {
		defer close(c.msgs)
		for {
			m, err := w.readErr(time.Hour) // answers pings
			if err != nil {
				c.err = err
				return
			}
			c.msgs <- m
		}
	}()
	return c
}

// closeCode returns the close code of the socket, once closed, or -1 while it is open (its
// messages unread are dropped).
func (c *capsClient) closeCode() int {
	for {
		select {
		case _, ok := <-c.msgs:
			if !ok {
				return int(websocket.CloseStatus(c.err))
			}
		default:
			return -1
		}
	}
}

// recv returns the next message within d, or false.
func (c *capsClient) recv(d time.Duration) (wsMsg, bool) {
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("the socket closed")
		}
		return m, true
	case <-time.After(d):
		return wsMsg{}, false
	}
}

// next returns the pet of the next event, which must be of operation id.
func (c *capsClient) next(id string) petEvent {
	c.t.Helper()
	m, ok := c.recv(10 * time.Second)
	var p struct {
		Data   struct{ PetAdded petEvent }
		Errors []any
	}
	if !ok || m.Type != "next" || m.ID != id || json.Unmarshal(m.Payload, &p) != nil || len(p.Errors) > 0 {
		c.t.Fatalf("got %v %s %s %s; want an event of %s", ok, m.Type, m.ID, m.Payload, id)
	}
	return p.Data.PetAdded
}

// connectRefused opens a WebSocket with key and returns the close code and reason of its
// connection_init.
func (s *liveServer) connectRefused(t *testing.T, key string) (int, string) {
	t.Helper()
	w, err := s.dial(t, http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	w.send(wsMsg{Type: "connection_init"})
	code, reason := w.closeStatus(5 * time.Second)
	return int(code), reason
}

// runs subscribes as id on c and checks that the subscription runs: no refusal comes.
func (c *capsClient) runs(id string) {
	c.t.Helper()
	c.subscribe(id, "")
	if m, ok := c.recv(700 * time.Millisecond); ok {
		c.t.Fatalf("subscription %s: got %s %s; want it to run", id, m.Type, m.Payload)
	}
}

// refused subscribes as id on c and checks that it is refused with code (RATE_LIMITED,
// UNAVAILABLE), then completed.
func (c *capsClient) refused(id, code string) {
	c.t.Helper()
	if ok, m := c.try(id, 10*time.Second); ok || !strings.Contains(string(m.Payload), code) {
		c.t.Fatalf("subscription %s: got %s %s %s; want its refusal with %s", id, m.Type, m.ID, m.Payload, code)
	}
}

// try subscribes as id on c and reports whether it runs (no refusal within d); a refusal is
// read to its end and returned.
func (c *capsClient) try(id string, d time.Duration) (bool, wsMsg) {
	c.t.Helper()
	c.subscribe(id, "")
	m, ok := c.recv(d)
	if !ok {
		return true, m
	}
	if (m.Type != "error" && m.Type != "next") || m.ID != id {
		c.t.Fatalf("subscription %s: got %s %s %s; want it to run or its refusal", id, m.Type, m.ID, m.Payload)
	}
	if e, ok := c.recv(5 * time.Second); !ok || e.Type != "complete" || e.ID != id {
		c.t.Fatalf("after the refusal of %s: %+v; want complete", id, e)
	}
	return false, m
}

// sseOpen opens a petAdded stream with key and returns its answer's status, the body of a
// refusal, and the response (its body closed when t ends or cancel is called).
func (s *liveServer) sseOpen(t *testing.T, key string) (int, string, *http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp := s.sseStream(t, ctx, key, "")
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "", resp, cancel
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp, cancel
}

// sseOverCap checks that a stream of key on s is refused over the cap: 429 rate_limited with
// Retry-After, saying so.
func (s *liveServer) sseOverCap(t *testing.T, key string) {
	t.Helper()
	status, body, resp, _ := s.sseOpen(t, key)
	if status != http.StatusTooManyRequests || !strings.Contains(body, `"code":"rate_limited"`) ||
		!strings.Contains(body, "already holds") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a stream over the cap: %d %s; want 429 rate_limited about the cap, with Retry-After", status, body)
	}
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
