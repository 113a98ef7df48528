package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"petstore/app"
	"petstore/models"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestPetAddedShapes: subscribers of one event with selections of different shapes (names,
// order, @skip and @include by variables of one document), and one that gqlgen's own path
// writes, each get the exact bytes of their own selection, over WebSocket and SSE, with a
// name that JSON escapes.
func TestPetAddedShapes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
		w := s.connect(t, s.key)
		const vDoc = `subscription($v: Boolean!) { petAdded { cursor @skip(if: $v) pet { id status @include(if: $v) } } }`
		ops := []struct {
			id, query string
			vars      map[string]any
		}{
			{"a", `subscription { petAdded { cursor pet { id name } } }`, nil},
			{"b", `subscription { petAdded { p: pet { name id } c: cursor __typename } }`, nil},
			{"c", vDoc, map[string]any{"v": true}},
			{"d", vDoc, map[string]any{"v": false}},
			{"e", `subscription { petAdded { pet { __typename @skip(if: true) } } }`, nil},
			{"f", `subscription { petAdded { c: cursor pet { i: id n: name } } }`, nil},
		}
		for _, op := range ops {
			p, _ := json.Marshal(map[string]any{"query": op.query, "variables": op.vars})
			w.send(wsMsg{Type: "subscribe", ID: op.id, Payload: p})
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		events := sseEvents(s.sseStream(t, ctx, s.key, "").Body)
		s.waitActive(t, len(ops)+1)
		const name = `<b>"Rex" & \ ü</b>`
		const escaped = `\u003cb\u003e\"Rex\" \u0026 \\ ü\u003c/b\u003e`
		id := s.createPet(t, s.key, name, "sold")
		cur := models.EncodeCursor(id)
		want := map[string]string{
			"a": fmt.Sprintf(`{"cursor":%q,"pet":{"id":"%d","name":"%s"}}`, cur, id, escaped),
			"b": fmt.Sprintf(`{"p":{"name":"%s","id":"%d"},"c":%q,"__typename":"PetAdded"}`, escaped, id, cur),
			"c": fmt.Sprintf(`{"pet":{"id":"%d","status":"SOLD"}}`, id),
			"d": fmt.Sprintf(`{"cursor":%q,"pet":{"id":"%d"}}`, cur, id),
			"e": `{"pet":{}}`,
			"f": fmt.Sprintf(`{"c":%q,"pet":{"i":"%d","n":"%s"}}`, cur, id, escaped),
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer rcancel()
		for range ops {
			_, b, err := w.c.Read(rctx)
			if err != nil {
				t.Fatal(err)
			}
			var m wsMsg
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			frame := `{"payload":{"data":{"petAdded":` + want[m.ID] + `}},"id":"` + m.ID + `","type":"next"}`
			if string(b) != frame {
				t.Errorf("operation %s:\ngot  %s\nwant %s", m.ID, b, frame)
			}
			delete(want, m.ID)
		}
		if len(want) > 0 {
			t.Errorf("no event for %v", want)
		}
		sse := recvEvent(t, events)
		if w := fmt.Sprintf(`next {"data":{"petAdded":{"cursor":%q,"pet":{"id":"%d","name":"%s"}}}}`, cur, id, escaped); sse != w {
			t.Errorf("SSE:\ngot  %s\nwant %s", sse, w)
		}
	})
}
