package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"petstore/app"
	"petstore/auth"
	"petstore/live"
	"petstore/live/wire"
	"petstore/testkit/dbtest"
)

// TestWebSocketRefusals: what a hostile or careless WebSocket client tries, and gets.
func TestWebSocketRefusals(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	cfg := app.DefaultConfig()
	cfg.CORSOrigins = []string{"https://app.example", "https://*.partner.example"}
	s := newLiveServer(t, db, nil, cfg, "business")

	t.Run("no connection_init", func(t *testing.T) {
		w, err := s.dial(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if code, _ := w.closeStatus(10 * time.Second); code != live.CloseInitTimeout {
			t.Fatalf("close %d; want %d", code, live.CloseInitTimeout)
		}
		if d := time.Since(start); d < wire.InitTimeout-time.Second {
			t.Fatalf("closed after %v; want about %v", d, wire.InitTimeout)
		}
	})
	for name, payload := range map[string]string{
		"no key":      `{}`,
		"unknown key": fmt.Sprintf(`{"Authorization":"Bearer %s"}`, auth.NewKey(auth.PrefixFor(cfg.Env))),
		"not bearer":  `{"Authorization":"Basic eDp5"}`,
	} {
		t.Run(name, func(t *testing.T) {
			w, err := s.dial(t, nil)
			if err != nil {
				t.Fatal(err)
			}
			w.send(wsMsg{Type: "connection_init", Payload: json.RawMessage(payload)})
			if code, reason := w.closeStatus(5 * time.Second); code != live.CloseForbidden || reason == "" {
				t.Fatalf("close %d %q; want %d with a reason", code, reason, live.CloseForbidden)
			}
		})
	}
	t.Run("key in the upgrade's header", func(t *testing.T) {
		w, err := s.dial(t, http.Header{"Authorization": {"Bearer " + s.key}})
		if err != nil {
			t.Fatal(err)
		}
		w.send(wsMsg{Type: "connection_init"})
		if m := w.read(); m.Type != "connection_ack" {
			t.Fatalf("got %+v; want connection_ack", m)
		}
	})
	t.Run("cross-site origin", func(t *testing.T) {
		w, err := s.dial(t, http.Header{"Origin": {"https://evil.example"}})
		if err == nil || w.resp == nil || w.resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("dial from a foreign origin: %v %v; want 400", err, w.resp)
		}
		for _, origin := range []string{"https://app.example", "https://shop.partner.example"} { // matched as CORS matches
			w, err := s.dial(t, http.Header{"Origin": {origin}})
			if err != nil {
				t.Fatalf("dial from the allowed origin %s: %v", origin, err)
			}
			_ = w.c.CloseNow()
		}
		if w, err := s.dial(t, http.Header{"Origin": {"https://partner.example.evil"}}); err == nil || w.resp == nil || w.resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("dial from a look-alike origin: %v %v; want 400", err, w.resp)
		}
	})
	t.Run("huge message", func(t *testing.T) {
		w := s.connect(t, s.key)
		big := strings.Repeat("x", wire.MaxMessageBytes+1)
		p, _ := json.Marshal(map[string]any{"query": "{ pets { id } }", "variables": map[string]any{"x": big}})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.c.Write(ctx, websocket.MessageText, append([]byte(`{"type":"subscribe","id":"1","payload":`), append(p, '}')...))
		if code, _ := w.closeStatus(5 * time.Second); code != websocket.StatusMessageTooBig {
			t.Fatalf("close %d; want %d", code, websocket.StatusMessageTooBig)
		}
	})
	t.Run("queries work over the socket", func(t *testing.T) {
		w := s.connect(t, s.key)
		p, _ := json.Marshal(map[string]any{"query": "{ pets { id } }"})
		w.send(wsMsg{Type: "subscribe", ID: "q", Payload: p})
		if m := w.read(); m.Type != "next" || !strings.Contains(string(m.Payload), `"pets"`) {
			t.Fatalf("got %+v; want the pets", m)
		}
	})
}

// TestWebSocketProtocolViolations: on both protocols, a second subscribe (start) with the id
// of an active operation closes the socket with 4409, a second connection_init with 4429 and
// a message of the other protocol with 4400; an id may be used again once its operation
// completed; a subscription selecting several root fields gets an error message.
func TestWebSocketProtocolViolations(t *testing.T) {
	t.Parallel()
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, app.DefaultConfig(), "business")
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

// TestInitPayloadNotAnObject: a connection_init whose payload is JSON but not an object (an array,
// a string, a number) is a message the protocol does not allow: the socket closes with 4400.
// gqlgen's transport, which fails to read such a payload into its map, would leave the socket open
// and uncharged, its pending slot given back, so that one address could hold any number of sockets
// for free.
func TestInitPayloadNotAnObject(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig()
	cfg.WSPendingPerAddr = 4
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, cfg, "free")
	payloads := []string{`[1]`, `"Bearer x"`, `1`, `true`}
	for i := range 3 * cfg.WSPendingPerAddr {
		w, err := s.dial(t, nil)
		if err != nil {
			t.Fatalf("keyless socket %d: %v (%v); want it open while the earlier ones are closed", i+1, err, w.resp)
		}
		w.rawSend(`{"type":"connection_init","payload":` + payloads[i%len(payloads)] + `}`)
		if code, msgs := w.closeWithin(2 * time.Second); code != live.CloseBadRequest {
			t.Fatalf("socket %d, payload %s: close %d after %v; want %d (-1: still open after 2 s)",
				i+1, payloads[i%len(payloads)], code, msgs, live.CloseBadRequest)
		}
	}
}

// TestSubscribePayloadNotOperation: a subscribe (start) whose payload is not an operation (not an
// object, or a query, operationName, variables or extensions of the wrong type) closes the socket
// with 4400 before gqlgen reads it. gqlgen would answer each with an "invalid json" error before
// the operation gate, uncharged and not counted among the refusals in a row, so that a key could
// make the server decode 64 KiB messages without end, for free.
func TestSubscribePayloadNotOperation(t *testing.T) {
	t.Parallel()
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, app.DefaultConfig(), "free")
	payloads := []string{`[]`, `"x"`, `{"query":1}`, `{"query":"{ pets { id } }","variables":"x"}`,
		`{"query":"{ pets { id } }","extensions":[1]}`, `{"query":"{ pets { id } }","operationName":{}}`}
	for _, proto := range []string{"graphql-transport-ws", "graphql-ws"} {
		typ := "subscribe"
		if proto != "graphql-transport-ws" {
			typ = "start"
		}
		for _, payload := range payloads {
			p := s.dialProtocol(t, proto, s.key)
			p.send(`{"type":"` + typ + `","id":"1","payload":` + payload + `}`)
			if code, reason := p.closed(); code != live.CloseBadRequest || reason == "" {
				t.Fatalf("%s, payload %s: close %d %q; want %d with a reason", proto, payload, code, reason, live.CloseBadRequest)
			}
			_ = p.c.CloseNow()
		}
	}
}

// TestIDReusedRightAfterComplete: a client's complete (stop) does not free its id at once: the
// operation is still active until the server's complete, and a subscribe with that id sent right
// after the client's complete closes with 4409. Were the id free at once, the old operation's
// complete, sent after the new one started, would free the new one's id, and a third subscribe
// would run a second operation under the same id, which no complete could stop.
func TestIDReusedRightAfterComplete(t *testing.T) {
	t.Parallel()
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, app.DefaultConfig(), "business")
	const petAdded = `subscription { petAdded { pet { name } } }`
	for _, proto := range []string{"graphql-transport-ws", "graphql-ws"} {
		stop := "complete"
		if proto != "graphql-transport-ws" {
			stop = "stop"
		}
		t.Run(proto, func(t *testing.T) {
			p := s.dialProtocol(t, proto, s.key)
			p.send(operation(proto, "1", petAdded))
			time.Sleep(200 * time.Millisecond)
			p.send(`{"type":"` + stop + `","id":"1"}`)
			// Either this one closes (4409: the first still ending) or the next does.
			_ = p.c.Write(context.Background(), websocket.MessageText, []byte(operation(proto, "1", petAdded)))
			time.Sleep(200 * time.Millisecond)
			_ = p.c.Write(context.Background(), websocket.MessageText, []byte(operation(proto, "1", petAdded)))
			time.Sleep(200 * time.Millisecond)
			s.createPet(t, s.key, "Twice", "")
			events := 0
			timeout := time.After(2 * time.Second)
			for {
				select {
				case m := <-p.msgs:
					if strings.Contains(string(m.Payload), "Twice") {
						events++
					}
					continue
				case err := <-p.err:
					var ce websocket.CloseError
					if !asCloseError(err, &ce) || ce.Code != live.CloseDuplicateID {
						t.Fatalf("closed with %v after %d events; want %d", err, events, live.CloseDuplicateID)
					}
				case <-timeout:
					t.Fatalf("still open, %d events of the pet under id 1; want close %d", events, live.CloseDuplicateID)
				}
				break
			}
			if events > 1 {
				t.Fatalf("%d events of one pet under one id", events)
			}
		})
	}
}
