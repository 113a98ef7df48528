package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"petstore/live"
)

// legacyProtocol is the older protocol gqlgen's transport also speaks (subscriptions-transport-ws),
// and serves a socket that names no subprotocol as.
const legacyProtocol = "graphql-ws"

// transportProtocol is graphql-transport-ws, the protocol of the graphql-ws library: the
// server pings and its clients answer pong.
const transportProtocol = "graphql-transport-ws"

// legacyMessages are the types of message a graphql-ws client may send.
var legacyMessages = map[string]bool{"connection_init": true, "start": true, "stop": true, "connection_terminate": true}

// transportMessages are the types of message a graphql-transport-ws client may send.
var transportMessages = map[string]bool{"connection_init": true, "subscribe": true, "complete": true, "ping": true, "pong": true}

// clientMessagesOf returns the types of message a client of subprotocol may send; gqlgen
// serves a socket naming none (or another) as legacyProtocol.
func clientMessagesOf(subprotocol string) map[string]bool {
	if subprotocol == transportProtocol {
		return transportMessages
	}
	return legacyMessages
}

// protocolState is what a WebSocket's messages must agree with: whether connection_init came,
// and the ids of the operations active, from the client's subscribe (start) to the server's
// complete or error (which also follows a client's complete or stop). gqlgen's transport
// checks none of this.
type protocolState struct {
	mu     sync.Mutex
	inited bool
	active []string // a socket runs one operation or a few: 16 bytes each, where a map takes 256
}

// clientMessage is what checkMessage decodes of a client's message.
type clientMessage struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Payload json.RawMessage `json:"payload"`
}

// errProtocol ends gqlgen's read loop after a message its protocol forbids; the socket is
// closed with the code checkMessage chose.
var errProtocol = apiError("wire: a message the protocol forbids")

// checkMessage checks data, a message of the peer on a socket of subprotocol, before gqlgen's
// transport reads it: it returns the close code and reason of a message the protocol forbids
// (not JSON, of another protocol, or failing checkInit or checkStart), else 0. Only the type,
// id and payload's top level are decoded.
func (s *protocolState) checkMessage(subprotocol string, data []byte) (int, string) {
	var m clientMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return live.CloseBadRequest, "invalid message: " + err.Error()
	}
	if !clientMessagesOf(subprotocol)[m.Type] {
		return live.CloseBadRequest, fmt.Sprintf("unexpected message type %q", m.Type)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m.Type {
	case "connection_init":
		return s.checkInit(m.Payload)
	case "subscribe", "start":
		return s.checkStart(m)
	}
	// A client's complete (stop) frees no id: its operation is active until the server's
	// complete, which gqlgen sends once the operation's goroutine ends. Freed here, the id
	// could start a second operation before the first ended.
	return 0, ""
}

// checkInit checks a connection_init with payload: the first, its payload an object (or
// none); s.mu is held.
func (s *protocolState) checkInit(payload json.RawMessage) (int, string) {
	if s.inited {
		return live.CloseInitAgain, "Too many initialisation requests"
	}
	if p := bytes.TrimSpace(payload); len(p) > 0 && !isKind(p, '{') {
		return live.CloseBadRequest, "the payload of connection_init is not an object"
	}
	s.inited = true
	return 0, ""
}

// checkStart checks m, a subscribe (start): an id not active, an operation (checkOperation);
// s.mu is held.
func (s *protocolState) checkStart(m clientMessage) (int, string) {
	if m.ID == "" {
		return live.CloseBadRequest, m.Type + " without an id"
	}
	if reason := checkOperation(m.Payload); reason != "" {
		return live.CloseBadRequest, reason
	}
	if slices.Contains(s.active, m.ID) {
		return live.CloseDuplicateID, fmt.Sprintf("Subscriber for %s already exists", m.ID)
	}
	s.active = append(s.active, m.ID)
	return 0, ""
}

// checkOperation returns why payload, that of a subscribe (start), is not an operation as
// gqlgen's transport reads it (graphql.RawParams: an object, or null, whose query and
// operationName are strings and whose variables and extensions are objects, each of them
// possibly null), or "". gqlgen would answer such a payload with an "invalid json" error
// before the operation is charged (conns.Registry.Charge) or counted among the refusals in a row.
func checkOperation(payload json.RawMessage) string {
	p := bytes.TrimSpace(payload)
	if len(p) == 0 {
		return "an operation without a payload"
	}
	var op struct {
		Query         json.RawMessage `json:"query"`
		OperationName json.RawMessage `json:"operationName"`
		Variables     json.RawMessage `json:"variables"`
		Extensions    json.RawMessage `json:"extensions"`
	}
	if !isKind(p, '{') || json.Unmarshal(p, &op) != nil {
		return "the payload of an operation is not an object"
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
		kind byte
	}{{"query", op.Query, '"'}, {"operationName", op.OperationName, '"'}, {"variables", op.Variables, '{'}, {"extensions", op.Extensions, '{'}} {
		if len(f.v) > 0 && !isKind(f.v, f.kind) {
			return fmt.Sprintf("the %s of an operation is of the wrong type", f.name)
		}
	}
	return ""
}

// isKind reports whether v, a JSON value without surrounding space, is null or starts with
// first ('{' an object, '"' a string).
func isKind(v []byte, first byte) bool {
	return v[0] == first || string(v) == "null"
}

// sent notes b, a message written to the peer: the server's complete or error ends the
// operation of its id. It reports whether b is a complete. Most messages, events included, are
// known by their bytes to be neither.
func (s *protocolState) sent(b []byte) (complete bool) {
	if !bytes.Contains(b, []byte(`"complete"`)) && !bytes.Contains(b, []byte(`"error"`)) {
		return false
	}
	var m struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if json.Unmarshal(b, &m) != nil || (m.Type != "complete" && m.Type != "error") {
		return false
	}
	s.mu.Lock()
	if i := slices.Index(s.active, m.ID); i >= 0 {
		s.active = slices.Delete(s.active, i, i+1)
	}
	s.mu.Unlock()
	return m.Type == "complete"
}
