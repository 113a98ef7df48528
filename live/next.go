package live

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	coderws "github.com/coder/websocket"
)

// The message gqlgen's graphql-transport-ws transport writes (graphqltransportwsMessage, an
// unexported struct of its package) is read by reflection, once its layout is checked to be
// the one json.Marshal writes as {"payload":...,"id":...,"type":...}.
var (
	transportPackage = reflect.TypeFor[transport.Websocket]().PkgPath()
	messageOnce      sync.Once
	messageLayoutOK  bool // else json.Marshal writes every message
)

// nextMessage returns the payload and operation id of v when it is a next message of
// graphql-transport-ws with a payload. gqlgen marshals that payload with json.Marshal (a
// graphql.Response): it is compact and escaped as json.Marshal would write it again.
func nextMessage(v any) (payload []byte, id string, ok bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, "", false
	}
	rv = rv.Elem()
	t := rv.Type()
	if t.Name() != "graphqltransportwsMessage" || t.PkgPath() != transportPackage {
		return nil, "", false
	}
	messageOnce.Do(func() { messageLayoutOK = isMessageLayout(t) })
	if !messageLayoutOK || rv.Field(2).String() != "next" {
		return nil, "", false
	}
	payload = rv.Field(0).Bytes()
	return payload, rv.Field(1).String(), len(payload) > 0
}

// isMessageLayout reports whether the struct t has the fields nextMessage reads, as
// json.Marshal writes them: Payload (a json.RawMessage), ID and Type (strings), in this order
// with these tags, and nothing else json.Marshal would write.
func isMessageLayout(t reflect.Type) bool {
	want := [...]struct {
		name, tag string
		kind      reflect.Kind
	}{{"Payload", "payload,omitempty", reflect.Slice}, {"ID", "id,omitempty", reflect.String}, {"Type", "type", reflect.String}}
	if t.Kind() != reflect.Struct || t.NumField() < len(want) || t.Field(0).Type != reflect.TypeFor[json.RawMessage]() {
		return false
	}
	for i, w := range want {
		if f := t.Field(i); f.Name != w.name || f.Tag.Get("json") != w.tag || f.Type.Kind() != w.kind {
			return false
		}
	}
	for i := len(want); i < t.NumField(); i++ {
		if t.Field(i).IsExported() {
			return false
		}
	}
	return true
}

// nextBuffers holds the buffers next messages are written in.
var nextBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeNext writes the next message of operation id with payload (nextMessage), with a
// buffer of nextBuffers.
func (c *coderConn) writeNext(payload []byte, id string) error {
	bp := nextBuffers.Get().(*[]byte)
	b := appendNext((*bp)[:0], payload, id)
	err := c.ws.Write(context.Background(), coderws.MessageText, b)
	if cap(b) <= 64<<10 { // the pool keeps no large buffer
		*bp = b[:0]
		nextBuffers.Put(bp)
	}
	return err
}

// appendNext appends the next message of operation id with payload as json.Marshal writes
// gqlgen's message, without marshalling (and validating) the payload again.
func appendNext(b, payload []byte, id string) []byte {
	b = append(append(b, `{"payload":`...), payload...)
	if id != "" {
		q, _ := json.Marshal(id) // a string always marshals
		b = append(append(b, `,"id":`...), q...)
	}
	return append(b, `,"type":"next"}`...)
}
