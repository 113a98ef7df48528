package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/live"
)

// rawSend writes msg as it is on w.
func (w *wsClient) rawSend(msg string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// closeWithin reads w until the server closes it or timeout passes, and returns the close
// code (-1 when it was still open) and the messages read before.
func (w *wsClient) closeWithin(timeout time.Duration) (websocket.StatusCode, []wsMsg) {
	var msgs []wsMsg
	deadline := time.Now().Add(timeout)
	for {
		m, err := w.readErr(time.Until(deadline))
		if err != nil {
			var ce websocket.CloseError
			if asCloseError(err, &ce) {
				return ce.Code, msgs
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return -1, msgs
			}
			return 0, msgs // the connection ended without a close frame
		}
		msgs = append(msgs, m)
	}
}

// TestInitPayloadNotAnObject: a connection_init whose payload is JSON but not an object (an
// array, a string, a number) is a message the protocol does not allow: the socket closes with
// 4400. gqlgen's transport, which fails to read such a payload into its map, returned without
// closing the connection and without charging anyone: the pending slot of the keyless upgrade
// was given back and the TCP connection stayed open for as long as the client liked, so one
// address held any number of sockets, free.
func TestInitPayloadNotAnObject(t *testing.T) {
	cfg := config.Default()
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

// TestSubscribePayloadNotOperation: a subscribe (start) whose payload is not an operation (not
// an object, or a query, operationName, variables or extensions of the wrong type) closes the
// socket with 4400 before gqlgen reads it. gqlgen answered each with an "invalid json" error
// before the operation gate: uncharged, and not counted among the refusals in a row, so a key
// could make the server decode 64 KiB messages without end, free.
func TestSubscribePayloadNotOperation(t *testing.T) {
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, config.Default(), "free")
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
// operation is still active until the server's complete. A subscribe with that id sent right
// after the client's complete closes with 4409; otherwise the old operation's complete, sent
// after the new one had started, freed the id of the new one, and a third subscribe ran a
// second operation under the same id, which no complete could stop.
func TestIDReusedRightAfterComplete(t *testing.T) {
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, config.Default(), "business")
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

// TestPersistedQueryHashesAreCharged: operations that name only a persisted query's hash (one
// the server does not know, and so answers PERSISTED_QUERY_NOT_FOUND without parsing anything)
// are charged to the key like any other operation, and count among the refusals in a row.
func TestPersistedQueryHashesAreCharged(t *testing.T) {
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, config.Default(), "free")
	_, before, _ := s.remaining(t, s.key)
	w := s.connect(t, s.key)
	for i := range live.MaxRefusedInRow {
		w.rawSend(`{"type":"subscribe","id":"` + string(rune('a'+i)) + `","payload":{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` +
			strings.Repeat("ab", 32) + `"}}}}`)
	}
	code, msgs := w.closeWithin(5 * time.Second)
	if code != live.CloseBadRequest {
		t.Fatalf("after %d hash-only operations: close %d, %d messages; want %d", live.MaxRefusedInRow, code, len(msgs), live.CloseBadRequest)
	}
	// One request for the socket, one for each operation, one for this check.
	if _, after, _ := s.remaining(t, s.key); before-after != live.MaxRefusedInRow+2 {
		t.Fatalf("budget %d -> %d; want %d spent", before, after, live.MaxRefusedInRow+2)
	}
}
