package gqlhttp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// FuzzWriteResponse checks that writeResponse writes any response whose data is compact JSON,
// as gqlgen's is, byte for byte as json.Marshal does, on the plain path and off it: errors,
// extensions, and characters that json.Marshal escapes; and in one Write.
func FuzzWriteResponse(f *testing.F) {
	for _, data := range []string{
		`{"pets":[{"id":"1","name":"Rex","categoryId":"2","status":"AVAILABLE"}]}`,
		`{"pets":[{"name":"<b>&amp;</b>"}]}`, "{\"p\":\"\u2028\u2029 é ✓\"}", `null`, `{}`, `[1, 2]`, `"\xff"`,
	} {
		f.Add(data, 1, "", false)
		f.Add(data, 0, "boom", true)
		f.Add(data, -1, "note", false)
	}
	f.Fuzz(func(t *testing.T, data string, cost int, errMsg string, hasNext bool) {
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(data)) != nil {
			return
		}
		resp := &graphql.Response{Data: compact.Bytes()}
		switch {
		case cost > 0:
			resp.Extensions = map[string]any{"cost": cost}
		case cost < 0:
			resp.Extensions = map[string]any{"cost": cost, "note": errMsg}
		}
		if errMsg != "" {
			resp.Errors = gqlerror.List{{Message: errMsg, Extensions: map[string]any{"code": "INVALID_REQUEST"}}}
		}
		if hasNext {
			resp.HasNext = &hasNext
		}
		want, err := json.Marshal(resp)
		if err != nil {
			t.Skip(err)
		}
		var got countingWriter
		writeResponse(&got, resp)
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("writeResponse:\ngot  %s\nwant %s", got.Bytes(), want)
		}
		if got.writes != 1 {
			t.Errorf("writeResponse wrote in %d calls; want 1", got.writes)
		}
	})
}

// countingWriter is a bytes.Buffer that counts the calls of Write.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(b)
}

// TestPlainResponseTaken checks that the answer of a page of pets takes the plain path, and
// that one needing escapes or carrying errors does not.
func TestPlainResponseTaken(t *testing.T) {
	ext := map[string]any{"cost": 1}
	for _, tc := range []struct {
		resp  *graphql.Response
		plain bool
	}{
		{&graphql.Response{Data: []byte(`{"pets":[{"id":"1","name":"Rex"}]}`), Extensions: ext}, true},
		{&graphql.Response{Data: []byte(`{"pets":[{"name":"a<b"}]}`), Extensions: ext}, false},
		{&graphql.Response{Data: []byte("{\"pets\":[{\"name\":\"a\u2028\"}]}"), Extensions: ext}, false},
		{&graphql.Response{Data: []byte(`null`), Errors: gqlerror.List{{Message: "x"}}}, false},
		{&graphql.Response{Errors: gqlerror.List{{Message: "x"}}}, false},
	} {
		if _, plain := appendPlain(nil, tc.resp); plain != tc.plain {
			t.Errorf("appendPlain(%s): plain %v; want %v", tc.resp.Data, plain, tc.plain)
		}
	}
}
