package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestCreateIgnoresPreconditions: POST /v1/pets evaluates no precondition, as docs/rest.md and
// the served document's createPet say. If-None-Match: * (which RFC 9110 answers with 412 where
// it is evaluated: /v1/pets always has a representation), If-None-Match with the list's ETag,
// If-Match and If-Unmodified-Since each leave the request as it is without them: 201, the pet
// stored; and an Idempotency-Key beside them still replays the first answer and adds nothing.
func TestCreateIgnoresPreconditions(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		listTag := api.do(t, get("/v1/pets")).header.Get("ETag")
		preconditions := []http.Header{
			{"If-None-Match": {"*"}},
			{"If-None-Match": {listTag}},
			{"If-Match": {`"no-such-tag"`}},
			{"If-Match": {"*"}},
			{"If-Unmodified-Since": {"Thu, 01 Jan 1970 00:00:00 GMT"}},
			{"If-None-Match": {"*"}, "Idempotency-Key": {"create-if-none-match"}},
		}
		var ids []int64
		for i, h := range preconditions {
			req := post("/v1/pets", fmt.Sprintf(`{"name":"Pet %d","categoryId":1}`, i))
			req.header = h
			created := api.do(t, req)
			if created.status != http.StatusCreated {
				t.Fatalf("POST with %v: got %d %s; want 201", h, created.status, created.body)
			}
			ids = append(ids, decodePet(t, created.body).ID)
			if i == len(preconditions)-1 {
				replay := api.do(t, req)
				if replay.status != http.StatusCreated || replay.body != created.body || replay.header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("POST with %v again: got %d %s, Idempotent-Replayed %q; want the first answer replayed",
						h, replay.status, replay.body, replay.header.Get("Idempotent-Replayed"))
				}
			}
		}
		var stored []struct{ ID int64 }
		if list := api.do(t, get("/v1/pets")); json.Unmarshal([]byte(list.body), &stored) != nil || len(stored) != len(ids) {
			t.Errorf("stored: got %s; want the %d pets %v", list.body, len(ids), ids)
		}

		var doc struct {
			Paths map[string]map[string]struct{ Description string }
		}
		if err := json.Unmarshal([]byte(api.do(t, get("/v1/openapi.json")).body), &doc); err != nil {
			t.Fatal(err)
		}
		if d := doc.Paths["/pets"]["post"].Description; !strings.Contains(d, "`If-None-Match: *` included) are ignored") {
			t.Errorf("createPet's description %q does not say that preconditions are ignored", d)
		}
	})
}
