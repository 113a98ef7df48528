package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/migrations"
	"petstore/models"
	"petstore/store"
)

// liveServer is the real handler behind a real HTTP server, for WebSocket and SSE clients.
type liveServer struct {
	url string
	key string
	db  *store.DB
	cfg config.Config
	svc *app.Service
	srv *httptest.Server
}

// newLiveServer serves the service over db (and Redis when rdb is not nil) with a key of plan.
func newLiveServer(t testing.TB, db *store.DB, rdb redis.UniversalClient, cfg config.Config, plan string) *liveServer {
	t.Helper()
	svc, err := app.New(cfg, db, rdb, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	s := &liveServer{url: srv.URL, db: db, cfg: cfg, svc: svc, srv: srv}
	t.Cleanup(func() { svc.CloseStreams(); srv.Close() })
	s.key = s.newKey(t, plan)
	return s
}

func (s *liveServer) newKey(t testing.TB, plan string) string {
	t.Helper()
	key, _, err := auth.CreateKey(context.Background(), s.db.DB, s.cfg.KeyPrefix(), auth.KeySpec{Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// createPet adds a pet over REST with key and returns its id; extra headers are added.
func (s *liveServer) createPet(t testing.TB, key, name, status string, extra ...string) int64 {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"categoryId":1`, name)
	if status != "" {
		body += fmt.Sprintf(`,"status":%q`, status)
	}
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/pets", strings.NewReader(body+"}"))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pet struct{ ID int64 }
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &pet) != nil {
		t.Fatalf("POST /v1/pets: %d %s", resp.StatusCode, b)
	}
	return pet.ID
}

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

// TestPetAddedOverWebSocket: a subscriber sees each pet created over REST, over GraphQL and
// with an Idempotency-Key once it committed, once (a replay sends nothing), in id order;
// status filters.
func TestPetAddedOverWebSocket(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := newLiveServer(t, db, nil, config.Default(), "business")
		w := s.connect(t, s.key)
		w.subscribe("all", "")
		w.subscribe("sold", "(status: SOLD)")
		time.Sleep(100 * time.Millisecond) // the subscriptions start
		var got0 []string
		a := s.createPet(t, s.key, "Rex", "available")
		ev := w.next("all")
		if ev.Pet.ID != fmt.Sprint(a) || ev.Pet.Name != "Rex" || ev.Pet.Status == nil || *ev.Pet.Status != "AVAILABLE" {
			t.Fatalf("event %+v; want pet %d Rex AVAILABLE", ev, a)
		}
		b := s.createPet(t, s.key, "Tom", "sold", "Idempotency-Key", "k1")
		committed := time.Now()
		if m := w.read(); time.Since(committed) > time.Second || m.Type != "next" {
			t.Fatalf("the idempotent POST's event: %+v after %v; want it at once (woken at the commit, not by the 2 s poll)", m, time.Since(committed))
		} else {
			var p struct{ Data struct{ PetAdded petEvent } }
			_ = json.Unmarshal(m.Payload, &p)
			got0 = append(got0, m.ID+":"+p.Data.PetAdded.Pet.ID)
		}
		if again := s.createPet(t, s.key, "Tom", "sold", "Idempotency-Key", "k1"); again != b {
			t.Fatalf("replay: id %d; want %d", again, b)
		}
		c := s.graphQLCreate(t, "Kit")
		got := map[string][]string{}
		for _, e := range got0 {
			id, pet, _ := strings.Cut(e, ":")
			got[id] = append(got[id], pet)
		}
		for range 2 { // b on the other, c on all
			m := w.read()
			var p struct{ Data struct{ PetAdded petEvent } }
			_ = json.Unmarshal(m.Payload, &p)
			got[m.ID] = append(got[m.ID], p.Data.PetAdded.Pet.ID)
		}
		if want := []string{fmt.Sprint(b), fmt.Sprint(c)}; fmt.Sprint(got["all"]) != fmt.Sprint(want) {
			t.Errorf("all: got %v; want %v", got["all"], want)
		}
		if fmt.Sprint(got["sold"]) != fmt.Sprint([]string{fmt.Sprint(b)}) {
			t.Errorf("sold: got %v; want [%d]", got["sold"], b)
		}
		if m, err := w.readErr(300 * time.Millisecond); err == nil {
			t.Errorf("a replayed POST sent %+v; want nothing", m)
		}
	})
}

// graphQLCreate adds a pet with the createPet mutation.
func (s *liveServer) graphQLCreate(t testing.TB, name string) int64 {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": fmt.Sprintf(`mutation { createPet(input: {name: %q, categoryId: 1}) { id } }`, name)})
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/graphql", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct{ CreatePet struct{ ID string } }
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || out.Data.CreatePet.ID == "" {
		t.Fatalf("createPet: %d %s", resp.StatusCode, b)
	}
	var id int64
	fmt.Sscan(out.Data.CreatePet.ID, &id)
	return id
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

// TestPetAddedOverSSE: the same subscription over Server-Sent Events, with the rate-limit
// headers; a request without a key gets the JSON Error body with 401.
func TestPetAddedOverSSE(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := newLiveServer(t, db, nil, config.Default(), "business")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp := s.sseStream(t, ctx, s.key, "")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
			resp.Header.Get("X-RateLimit-Limit") == "" {
			t.Fatalf("SSE answer: %d %v", resp.StatusCode, resp.Header)
		}
		events := sseEvents(resp.Body)
		time.Sleep(100 * time.Millisecond)
		id := s.createPet(t, s.key, "Rex", "")
		if e := recvEvent(t, events); !strings.Contains(e, fmt.Sprintf(`"id":"%d"`, id)) || !strings.HasPrefix(e, "next ") {
			t.Fatalf("event %q; want pet %d", e, id)
		}

		anon := s.sseStream(t, ctx, "", "")
		b, _ := io.ReadAll(anon.Body)
		if anon.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"code":"unauthorized"`) {
			t.Fatalf("without a key: %d %s; want 401 unauthorized", anon.StatusCode, b)
		}
	})
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// TestPetAddedResume: with after, the pets added since come first from the database, then
// live ones, none twice; with concurrent writers none is skipped across the switch. A
// malformed cursor is INVALID_REQUEST.
func TestPetAddedResume(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := newLiveServer(t, db, nil, config.Default(), "business")
		var ids []int64
		for i := range 5 {
			ids = append(ids, s.createPet(t, s.key, fmt.Sprint("p", i), ""))
		}
		w := s.connect(t, s.key)
		w.subscribe("bad", `(after: "nope")`)
		if m := w.read(); !strings.Contains(string(m.Payload), "INVALID_REQUEST") || !strings.Contains(string(m.Payload), "cursor") {
			t.Fatalf("malformed cursor: %s %s; want INVALID_REQUEST about the cursor", m.Type, m.Payload)
		}
		_ = w.read() // complete
		first := petEvent{}
		w.subscribe("r", `(after: "`+cursorOf(ids[1])+`")`)
		// Writers add pets while the subscription pages through the database.
		done := make(chan []int64)
		go func() {
			var more []int64
			for i := range 20 {
				more = append(more, s.createPet(t, s.key, fmt.Sprint("q", i), ""))
			}
			done <- more
		}()
		var got []string
		for range 3 + 20 {
			ev := w.next("r")
			if first.Cursor == "" {
				first = ev
			}
			got = append(got, ev.Pet.ID)
		}
		more := <-done
		var want []string
		for _, id := range append(ids[2:], more...) {
			want = append(want, fmt.Sprint(id))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("resumed: got %v; want %v", got, want)
		}
		if first.Cursor != cursorOf(ids[2]) {
			t.Fatalf("cursor %q; want %q", first.Cursor, cursorOf(ids[2]))
		}
		if m, err := w.readErr(300 * time.Millisecond); err == nil {
			t.Fatalf("one more: %+v; want nothing", m)
		}
	})
}

// cursorOf returns the cursor of the pet with id, as petsConnection gives it.
func cursorOf(id int64) string { return models.EncodeCursor(id) }

// TestPetAddedAcrossInstances: with Redis (a single server, and a Redis Cluster), a pet
// created on instance A reaches a subscriber on instance B at once, not at B's poll.
func TestPetAddedAcrossInstances(t *testing.T) {
	cases := map[string]func(t *testing.T) string{
		"single": func(t *testing.T) string {
			dbtest.Redis(t) // skips or fails when unreachable
			if u := os.Getenv("PETSTORE_TEST_REDIS"); u != "" {
				return u
			}
			return dbtest.DefaultRedis
		},
		"cluster": func(t *testing.T) string { return dbtest.NewRedisCluster(t).URL() },
	}
	for name, url := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			cfg.RedisURL = url(t)
			cfg.RateLimit.RedisKeyPrefix = "test:" + fmt.Sprint(time.Now().UnixNano()) + ":"
			db := dbtest.New(t, "mysql")
			var insts []*liveServer
			for range 2 {
				rdb, err := app.OpenRedis(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = rdb.Close() })
				insts = append(insts, newLiveServer(t, db, rdb, cfg, "business"))
			}
			w := insts[1].connect(t, insts[1].key)
			w.subscribe("1", "")
			time.Sleep(500 * time.Millisecond) // B listens
			for i := range 3 {
				start := time.Now()
				id := insts[0].createPet(t, insts[0].key, fmt.Sprint("x", i), "")
				ev := w.next("1")
				if ev.Pet.ID != fmt.Sprint(id) {
					t.Fatalf("B got %s; want %d", ev.Pet.ID, id)
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("B got pet %d after %v; want well within the 2 s poll", id, d)
				}
			}
		})
	}
}

// TestPetAddedRedisDown: while the Redis node of the wake-ups is down, subscriptions stay
// open and pets still arrive (each instance reads the database every 2 s); once it is back,
// delivery goes on, none lost or repeated.
func TestPetAddedRedisDown(t *testing.T) {
	c := dbtest.NewRedisCluster(t)
	cfg := config.Default()
	cfg.RedisURL = c.URL()
	cfg.RateLimit.RedisKeyPrefix = "test:" + fmt.Sprint(time.Now().UnixNano()) + ":"
	db := dbtest.New(t, "sqlite")
	var insts []*liveServer
	var rdbs []redis.UniversalClient
	for range 2 {
		rdb, err := app.OpenRedis(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		rdbs = append(rdbs, rdb)
		insts = append(insts, newLiveServer(t, db, rdb, cfg, "business"))
	}
	w := insts[1].connect(t, insts[1].key)
	w.subscribe("1", "")
	time.Sleep(500 * time.Millisecond)
	expect := func(what string) {
		t.Helper()
		id := insts[0].createPet(t, insts[0].key, what, "")
		if ev := w.next("1"); ev.Pet.ID != fmt.Sprint(id) {
			t.Fatalf("%s: B got %s; want %d", what, ev.Pet.ID, id)
		}
	}
	expect("before")
	owner, err := rdbs[0].(*redis.ClusterClient).MasterForKey(context.Background(), cfg.RateLimit.RedisKeyPrefix+app.LiveChannel)
	if err != nil {
		t.Fatal(err)
	}
	node := slices.Index(c.Addrs, owner.Options().Addr)
	c.Stop(t, node)
	time.Sleep(1500 * time.Millisecond) // the cluster declares it failed
	expect("during")
	expect("during, again")
	c.Restart(t, node)
	expect("after")
	if m, err := w.readErr(300 * time.Millisecond); err == nil {
		t.Fatalf("one more: %+v; want nothing", m)
	}
}

// TestPetAddedWaitsForMissingID is TestPageWaitsForMissingID for a subscriber: pet 2, whose
// insert took its id first, is not in the table yet when pet 3 commits and pet 4 is added
// over REST; the subscriber gets 2, 3 and 4, in that order, once pet 2 arrives.
func TestPetAddedWaitsForMissingID(t *testing.T) {
	db := dbtest.New(t, migrations.MySQL)
	s := newLiveServer(t, db, nil, config.Default(), "business")
	s.createPet(t, s.key, "first", "") // pet 1, before the subscription
	w := s.connect(t, s.key)
	w.subscribe("all", "")
	time.Sleep(100 * time.Millisecond) // the subscription starts
	insertWithID(t, db, 3, "sold")
	s.createPet(t, s.key, "fourth", "") // pet 4, which wakes the Hub
	time.Sleep(300 * time.Millisecond)  // time enough for events that should not come
	insertWithID(t, db, 2, "sold")
	var got []string
	for range 3 {
		got = append(got, w.next("all").Pet.ID)
	}
	if fmt.Sprint(got) != "[2 3 4]" {
		t.Errorf("events: got %v; want [2 3 4]", got)
	}
}
