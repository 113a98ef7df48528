package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsClient is a graphql-transport-ws client.
type wsClient struct {
	t    testing.TB
	c    *websocket.Conn
	resp *http.Response
}

// wsMsg is a graphql-transport-ws message.
type wsMsg struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// dial opens a WebSocket on /v1/graphql with header (nil: none).
func (s *liveServer) dial(t testing.TB, header http.Header) (*wsClient, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/v1/graphql", &websocket.DialOptions{
		HTTPHeader: header, Subprotocols: []string{"graphql-transport-ws"},
	})
	if err != nil {
		return &wsClient{t: t, resp: resp}, err
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &wsClient{t: t, c: c, resp: resp}, nil
}

// connect dials and initialises with key in connection_init's payload.
func (s *liveServer) connect(t testing.TB, key string) *wsClient {
	t.Helper()
	w, err := s.dial(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.send(wsMsg{Type: "connection_init", Payload: json.RawMessage(fmt.Sprintf(`{"Authorization":"Bearer %s"}`, key))})
	if m := w.read(); m.Type != "connection_ack" {
		t.Fatalf("after connection_init: got %+v; want connection_ack", m)
	}
	return w
}

func (w *wsClient) send(m wsMsg) {
	w.t.Helper()
	b, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, b); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// readErr reads the next message other than a ping (answered with pong).
func (w *wsClient) readErr(timeout time.Duration) (wsMsg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			return wsMsg{}, err
		}
		var m wsMsg
		if err := json.Unmarshal(b, &m); err != nil {
			return wsMsg{}, err
		}
		if m.Type == "ping" {
			_ = w.c.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
			continue
		}
		return m, nil
	}
}

func (w *wsClient) read() wsMsg {
	w.t.Helper()
	m, err := w.readErr(10 * time.Second)
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	return m
}

// subscribe starts petAdded with args ("" for none) as operation id.
func (w *wsClient) subscribe(id, args string) {
	q := `subscription { petAdded` + args + ` { cursor pet { id name categoryId status } } }`
	p, _ := json.Marshal(map[string]any{"query": q})
	w.send(wsMsg{Type: "subscribe", ID: id, Payload: p})
}

// petEvent is one petAdded event.
type petEvent struct {
	Cursor string
	Pet    struct {
		ID, Name, CategoryID string
		Status               *string
	}
}

// next reads the next event of operation id.
func (w *wsClient) next(id string) petEvent {
	w.t.Helper()
	m := w.read()
	if m.Type != "next" || m.ID != id {
		w.t.Fatalf("got %s %s %s; want next of %s", m.Type, m.ID, m.Payload, id)
	}
	var p struct {
		Data   struct{ PetAdded petEvent }
		Errors []any
	}
	if err := json.Unmarshal(m.Payload, &p); err != nil || len(p.Errors) > 0 {
		w.t.Fatalf("next %s: %s", id, m.Payload)
	}
	return p.Data.PetAdded
}

// closeStatus waits for the server's close and returns its code and reason.
func (w *wsClient) closeStatus(timeout time.Duration) (websocket.StatusCode, string) {
	w.t.Helper()
	for {
		_, err := w.readErr(timeout)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if ok := asCloseError(err, &ce); ok {
			return ce.Code, ce.Reason
		}
		w.t.Fatalf("want a close; got %v", err)
	}
}

func asCloseError(err error, ce *websocket.CloseError) bool {
	code := websocket.CloseStatus(err)
	if code == -1 {
		return false
	}
	var e websocket.CloseError
	if ok := errorsAs(err, &e); ok {
		*ce = e
		return true
	}
	ce.Code = code
	return true
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

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

// sseStream opens petAdded over SSE with key and args; it returns the response.
func (s *liveServer) sseStream(t testing.TB, ctx context.Context, key, args string) *http.Response {
	t.Helper()
	q, _ := json.Marshal(map[string]any{"query": `subscription { petAdded` + args + ` { cursor pet { id name } } }`})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/graphql", strings.NewReader(string(q)))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseEvents returns the events of an SSE body, "event data" each, sent on a channel.
func sseEvents(body io.Reader) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		var ev, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case strings.HasPrefix(line, ": "): // a comment with text, saying why a stream ends
				ch <- line
			case line == "" && ev != "":
				ch <- ev + " " + data
				ev, data = "", ""
			}
		}
	}()
	return ch
}

func recvEvent(t testing.TB, ch <-chan string) string {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return ""
}
