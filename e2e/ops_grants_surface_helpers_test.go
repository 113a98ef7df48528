package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// servedAs drives the whole surface of the instance at base, with key (devKey for one
// request): REST creates with and without Idempotency-Key (a replay, and 422 for another
// body), petAdded over WebSocket and SSE resumed after the first pet, GraphQL's createPet, the
// listing paged through Link, a pet with its ETag, 304 and HEAD, and GraphQL's pets,
// petsConnection paged through its cursors, and pet.
func servedAs(t *testing.T, base, devKey, key string) {
	t.Helper()
	s := &liveServer{url: base, key: key}
	if resp, body := send(t, http.MethodGet, base+"/v1/pets", devKey, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/pets with the development key: %d %s", resp.StatusCode, body)
	}
	rex := `{"name":"Rex","categoryId":1,"status":"available"}`
	first := s.createPet(t, key, "Rex", "available", "Idempotency-Key", "least-1")
	resp, body := send(t, http.MethodPost, base+"/v1/pets", key, rex, "Idempotency-Key", "least-1")
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(body), fmt.Sprintf(`"id":%d,`, first)) {
		t.Errorf("the POST again with its Idempotency-Key: %d %v %s; want the first answer replayed", resp.StatusCode, resp.Header, body)
	}
	if resp, body := send(t, http.MethodPost, base+"/v1/pets", key, `{"name":"Max","categoryId":1}`, "Idempotency-Key", "least-1"); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("another body with the same Idempotency-Key: %d %s; want 422", resp.StatusCode, body)
	}

	resume := fmt.Sprintf(`(after: %q)`, cursorOf(first))
	ws := s.connect(t, key)
	ws.subscribe("1", resume)
	sse := sseEvents(s.sseStream(t, t.Context(), key, resume).Body)
	ids := []int64{first}
	for i := range 3 {
		ids = append(ids, s.createPet(t, key, "pet "+strconv.Itoa(i), ""))
	}
	ids = append(ids, s.graphQLCreate(t, "Tom"))
	for _, id := range ids[1:] {
		if ev := ws.next("1"); ev.Pet.ID != strconv.FormatInt(id, 10) {
			t.Errorf("petAdded over WebSocket: pet %s; want %d", ev.Pet.ID, id)
		}
		if ev := recvEvent(t, sse); !strings.HasPrefix(ev, "next ") || !strings.Contains(ev, fmt.Sprintf(`"id":"%d"`, id)) {
			t.Errorf("petAdded over SSE: %s; want pet %d", ev, id)
		}
	}

	if listed := walkPages(t, s, 2); len(listed) != len(ids) {
		t.Errorf("GET /v1/pets?limit=2, every page: %v; want %v", listed, ids)
	}
	path := base + "/v1/pets/" + strconv.FormatInt(first, 10)
	resp, body = send(t, http.MethodGet, path, key, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == "" {
		t.Errorf("GET a pet: %d %s; want 200 with an ETag", resp.StatusCode, body)
	}
	if resp, _ := send(t, http.MethodGet, path, key, "", "If-None-Match", resp.Header.Get("ETag")); resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET a pet with its ETag: %d; want 304", resp.StatusCode)
	}
	if resp, _ := send(t, http.MethodHead, path, key, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD a pet: %d; want 200", resp.StatusCode)
	}

	var pets struct{ Pets []struct{ ID string } }
	graphQL(t, base, key, `{ pets(limit: 100) { id } }`, &pets)
	var pet struct{ Pet struct{ Name string } }
	graphQL(t, base, key, fmt.Sprintf(`{ pet(id: "%d") { name } }`, first), &pet)
	if len(pets.Pets) != len(ids) || pet.Pet.Name != "Rex" {
		t.Errorf("GraphQL pets and pet: %+v, %+v; want %d pets and Rex", pets, pet, len(ids))
	}
	listed, after := 0, ""
	for page := 0; page < len(ids); page++ {
		var conn struct {
			PetsConnection struct {
				Edges    []struct{ Node struct{ ID string } }
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
		graphQL(t, base, key, `{ petsConnection(first: 2`+after+`) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`, &conn)
		listed += len(conn.PetsConnection.Edges)
		if !conn.PetsConnection.PageInfo.HasNextPage {
			break
		}
		after = fmt.Sprintf(", after: %q", conn.PetsConnection.PageInfo.EndCursor)
	}
	if listed != len(ids) {
		t.Errorf("petsConnection(first: 2), every page: %d pets; want %d", listed, len(ids))
	}
}

// checkRevoked makes a key with petstore keys create, run with env, checks that it answers 200
// at base, then that petstore keys revoke makes it answer 401 within a few seconds.
func checkRevoked(t *testing.T, env []string, base string) {
	t.Helper()
	out := mustRun(t, env, "keys", "create", "--plan", "free")
	key, id := lastLine(out), regexp.MustCompile(`created API key (\d+) `).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("keys create printed no id:\n%s", out)
	}
	if resp, body := send(t, http.MethodGet, base+"/v1/pets", key, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("a new key: %d %s", resp.StatusCode, body)
	}
	mustRun(t, env, "keys", "revoke", id[1])
	within(t, 5*time.Second, "the revoked key refused", func() bool {
		resp, _ := send(t, http.MethodGet, base+"/v1/pets", key, "")
		return resp.StatusCode == http.StatusUnauthorized
	})
}

// send sends one request with key ("" for none), body and the headers given in pairs, and
// returns the answer with its body read.
func send(t *testing.T, method, url, key, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// graphQL runs query at base with key and decodes its data into out; an error fails t.
func graphQL(t *testing.T, base, key, query string, out any) {
	t.Helper()
	q, _ := json.Marshal(map[string]string{"query": query})
	resp, body := send(t, http.MethodPost, base+"/v1/graphql", key, string(q))
	var answer struct {
		Data   json.RawMessage
		Errors []any
	}
	if err := json.Unmarshal(body, &answer); err != nil || resp.StatusCode != http.StatusOK || len(answer.Errors) > 0 ||
		json.Unmarshal(answer.Data, out) != nil {
		t.Fatalf("%s: %d %s", query, resp.StatusCode, body)
	}
}
