package wire

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/apierr"
	"petstore/live"
)

// TestProtocolStateMachine: a socket's messages are checked against its protocol: one
// connection_init with an object payload, operations with an id not active and a payload
// gqlgen reads; an id is free again only once the server's complete or error was sent.
func TestProtocolStateMachine(t *testing.T) {
	const op = `{"query":"subscription { petAdded { id } }"}`
	steps := []struct {
		proto, msg string
		sent       string // a server message sent before msg is checked
		code       int
	}{
		{transportProtocol, `{"type":"connection_init","payload":[1]}`, "", live.CloseBadRequest},
		{transportProtocol, `{"type":"connection_init"}`, "", 0},
		{transportProtocol, `{"type":"connection_init","payload":{}}`, "", live.CloseInitAgain},
		{transportProtocol, `{"type":"subscribe","id":"1","payload":` + op + `}`, "", 0},
		{transportProtocol, `{"type":"subscribe","id":"1","payload":` + op + `}`, "", live.CloseDuplicateID},
		{transportProtocol, `{"type":"complete","id":"1"}`, "", 0},
		{transportProtocol, `{"type":"subscribe","id":"1","payload":` + op + `}`, "", live.CloseDuplicateID},
		{transportProtocol, `{"type":"subscribe","id":"1","payload":` + op + `}`, `{"type":"complete","id":"1"}`, 0},
		{transportProtocol, `{"type":"subscribe","id":"2","payload":` + op + `}`, `{"type":"error","id":"1","payload":[]}`, 0},
		{transportProtocol, `{"type":"subscribe","id":"1","payload":` + op + `}`, "", 0},
		{transportProtocol, `{"type":"subscribe","payload":` + op + `}`, "", live.CloseBadRequest},
		{transportProtocol, `{"type":"subscribe","id":"3"}`, "", live.CloseBadRequest},
		{transportProtocol, `{"type":"subscribe","id":"3","payload":{"query":1}}`, "", live.CloseBadRequest},
		{transportProtocol, `{"type":"subscribe","id":"3","payload":{"variables":[]}}`, "", live.CloseBadRequest},
		{transportProtocol, `{"type":"start","id":"3","payload":` + op + `}`, "", live.CloseBadRequest},
		{transportProtocol, `not json`, "", live.CloseBadRequest},
		{transportProtocol, `{"type":"ping"}`, "", 0},
		{legacyProtocol, `{"type":"start","id":"4","payload":` + op + `}`, "", 0},
		{legacyProtocol, `{"type":"subscribe","id":"5","payload":` + op + `}`, "", live.CloseBadRequest},
		{"", `{"type":"stop","id":"4"}`, "", 0},
	}
	var s protocolState
	for i, step := range steps {
		if step.sent != "" {
			s.sent([]byte(step.sent))
		}
		if code, reason := s.checkMessage(step.proto, []byte(step.msg)); code != step.code || (code != 0) != (reason != "") {
			t.Fatalf("step %d, %s %s: %d %q; want %d", i, step.proto, step.msg, code, reason, step.code)
		}
	}
}

// TestSentKnowsComplete: sent reports a complete, not an error or an event that mentions one.
func TestSentKnowsComplete(t *testing.T) {
	var s protocolState
	for msg, want := range map[string]bool{
		`{"type":"complete","id":"1"}`:                                                 true,
		`{"type":"error","id":"1","payload":[]}`:                                       false,
		`{"type":"next","id":"1","payload":{"data":{"petAdded":{"name":"complete"}}}}`: false,
		`{"type":"ka"}`: false,
	} {
		if got := s.sent([]byte(msg)); got != want {
			t.Errorf("sent(%s): %v; want %v", msg, got, want)
		}
	}
}

// TestHandshake: an upgrade needs Connection: Upgrade, Sec-WebSocket-Key and version 13, and
// an Origin that is none, the request's own host or an allowed one; else 400.
func TestHandshake(t *testing.T) {
	for _, c := range []struct {
		name   string
		header map[string]string
		allow  bool
		ok     bool
	}{
		{"no origin", map[string]string{}, false, true},
		{"own host", map[string]string{"Origin": "https://example.com"}, false, true},
		{"other origin", map[string]string{"Origin": "https://evil.example"}, false, false},
		{"allowed origin", map[string]string{"Origin": "https://app.example"}, true, true},
		{"no key", map[string]string{"Sec-WebSocket-Key": ""}, false, false},
		{"version 8", map[string]string{"Sec-WebSocket-Version": "8"}, false, false},
		{"no upgrade", map[string]string{"Connection": "keep-alive"}, false, false},
	} {
		req := httptest.NewRequest("GET", "https://example.com/v1/graphql", nil)
		req.Header.Set("Connection", "keep-alive, Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("Sec-WebSocket-Version", "13")
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		allow := c.allow
		err := Handshake(req, func(*http.Request) bool { return allow })
		if (err == nil) != c.ok || (err != nil && err.Code != apierr.InvalidRequest) {
			t.Errorf("%s: %v; want ok %v (else invalid_request)", c.name, err, c.ok)
		}
		if c.ok && KeylessUpgrade(func(*http.Request) bool { return allow })(req) != true {
			t.Errorf("%s: not keyless without an Authorization header", c.name)
		}
	}
}

// TestCloseReason: a close reason fits the 123 bytes of a close frame.
func TestCloseReason(t *testing.T) {
	if r := closeReason(strings.Repeat("x", 200)); len(r) != 123 || !strings.HasSuffix(r, "...") {
		t.Fatalf("closeReason of 200 bytes: %d bytes %q", len(r), r)
	}
	if r := closeReason("short"); r != "short" {
		t.Fatalf("closeReason(short): %q", r)
	}
}
