package live

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// scriptedConn is a transport.WebsocketConn that plays a client's messages and hands over
// what the transport writes.
type scriptedConn struct {
	in      chan string
	written chan any
}

func (c *scriptedConn) NextReader() (int, io.Reader, error) {
	m, ok := <-c.in
	if !ok {
		return 0, nil, transport.ErrWebsocketClosed
	}
	return 1, bytes.NewReader([]byte(m)), nil
}

func (c *scriptedConn) WriteJSON(v any) error        { c.written <- v; return nil }
func (c *scriptedConn) WriteClose(int, string) error { return nil }
func (c *scriptedConn) Close() error                 { return nil }
func (c *scriptedConn) Subprotocol() string          { return "graphql-transport-ws" }

type scriptedImpl struct{ conn *scriptedConn }

func (i scriptedImpl) Accept(http.ResponseWriter, *http.Request, transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	return i.conn, nil
}

// oneEvent is a graphql.GraphExecutor whose every operation answers data, once.
type oneEvent struct{ data string }

func (e oneEvent) CreateOperationContext(_ context.Context, p *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	return &graphql.OperationContext{RawQuery: p.Query}, nil
}

func (e oneEvent) DispatchOperation(ctx context.Context, _ *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	return graphql.OneShot(&graphql.Response{Data: json.RawMessage(e.data)}), ctx
}

func (e oneEvent) DispatchError(_ context.Context, list gqlerror.List) *graphql.Response {
	return &graphql.Response{Errors: list}
}

// TestNextWrittenAsMarshalled checks that the next messages of gqlgen's graphql-transport-ws
// transport are written directly (nextMessage finds them, so an upgrade of gqlgen that changes
// its message fails here rather than making every event slower), byte for byte as
// json.Marshal writes them, for operation ids and data that JSON escapes; and that its other
// messages are left to json.Marshal.
func TestNextWrittenAsMarshalled(t *testing.T) {
	const data = `{"petAdded":{"cursor":"cGV0OnYxOjE","pet":{"id":"1","name":"<b>\"R\" & \\ \u2028 ü</b>"}}}`
	conn := &scriptedConn{in: make(chan string, 1), written: make(chan any, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ws := transport.Websocket{Implementation: scriptedImpl{conn}}
		ws.Do(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil), oneEvent{data})
	}()
	read := func() any {
		v := <-conn.written
		if _, _, ok := nextMessage(v); !ok {
			return v
		}
		return nil
	}
	conn.in <- `{"type":"connection_init"}`
	if v := read(); v == nil {
		t.Fatal("connection_ack taken for a next message")
	}
	for _, id := range []string{"1", `<a&"b">`, "\xff\u2028é", "a-b_c"} {
		msg, _ := json.Marshal(map[string]any{"type": "subscribe", "id": id, "payload": map[string]any{"query": "subscription { petAdded { cursor } }"}})
		var sent struct{ ID string } // as the transport reads it: \xff is U+FFFD
		_ = json.Unmarshal(msg, &sent)
		conn.in <- string(msg)
		v := <-conn.written
		payload, gotID, ok := nextMessage(v)
		if !ok || gotID != sent.ID {
			t.Fatalf("operation %q: nextMessage(%#v) = %q %v; want its next message", id, v, gotID, ok)
		}
		want, _ := json.Marshal(v)
		if got := appendNext(nil, payload, gotID); !bytes.Equal(got, want) {
			t.Errorf("operation %q:\ngot  %s\nwant %s", id, got, want)
		}
		if v := read(); v == nil {
			t.Fatalf("operation %q: its complete message taken for a next message", id)
		}
	}
	close(conn.in)
	<-done
}
