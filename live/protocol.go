package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// Close codes of a client's message that its protocol forbids (graphql-transport-ws's, given
// to graphql-ws sockets too): gqlgen's transport checks none of these.
const (
	CloseDuplicateID = 4409 // a subscribe (start) with the id of an operation still active
	CloseInitAgain   = 4429 // a second connection_init
)

// clientMessages are the types of message a client may send, by subprotocol; "" is served as
// legacyProtocol by gqlgen.
var clientMessages = map[string]map[string]bool{
	transportProtocol: {"connection_init": true, "subscribe": true, "complete": true, "ping": true, "pong": true},
	legacyProtocol:    {"connection_init": true, "start": true, "stop": true, "connection_terminate": true},
}

// protocolState is what a WebSocket's messages must agree with: whether connection_init came,
// and the ids of the operations active, from the client's subscribe (start) to its complete
// (stop) or the server's complete or error.
type protocolState struct {
	mu     sync.Mutex
	inited bool
	active map[string]bool
}

// errProtocol ends gqlgen's read loop after a message its protocol forbids; the socket is
// closed with the code checkMessage chose.
var errProtocol = apiError("live: a message the protocol forbids")

// checkMessage checks data, a message of the peer on a socket of subprotocol, before gqlgen's
// transport reads it: it returns the close code and reason of a message the protocol forbids
// (a second connection_init, an id already active, a message of another protocol or not
// JSON), else 0. Only the type and id are decoded.
func (s *protocolState) checkMessage(subprotocol string, data []byte) (int, string) {
	var m struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return CloseBadRequest, "invalid message: " + err.Error()
	}
	allowed := clientMessages[subprotocol]
	if allowed == nil {
		allowed = clientMessages[legacyProtocol]
	}
	if !allowed[m.Type] {
		return CloseBadRequest, fmt.Sprintf("unexpected message type %q", m.Type)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m.Type {
	case "connection_init":
		if s.inited {
			return CloseInitAgain, "Too many initialisation requests"
		}
		s.inited = true
	case "subscribe", "start":
		if m.ID == "" {
			return CloseBadRequest, m.Type + " without an id"
		}
		if s.active[m.ID] {
			return CloseDuplicateID, fmt.Sprintf("Subscriber for %s already exists", m.ID)
		}
		if s.active == nil {
			s.active = map[string]bool{}
		}
		s.active[m.ID] = true
	case "complete", "stop":
		delete(s.active, m.ID)
	}
	return 0, ""
}

// sent notes b, a message written to the peer: the server's complete or error ends the
// operation of its id. Most messages, events included, are known by their bytes not to be.
func (s *protocolState) sent(b []byte) {
	if !bytes.Contains(b, []byte(`"complete"`)) && !bytes.Contains(b, []byte(`"error"`)) {
		return
	}
	var m struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if json.Unmarshal(b, &m) != nil || (m.Type != "complete" && m.Type != "error") {
		return
	}
	s.mu.Lock()
	delete(s.active, m.ID)
	s.mu.Unlock()
}
