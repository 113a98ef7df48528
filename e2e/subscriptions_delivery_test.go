package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestPetAddedOverWebSocket: a subscriber sees each pet created over REST, over GraphQL and
// with an Idempotency-Key once it committed, once (a replay sends nothing), in id order;
// status filters.
func TestPetAddedOverWebSocket(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
		w := s.connect(t, s.key)
		w.subscribe("all", "")
		w.subscribe("sold", "(status: SOLD)")
		s.waitActive(t, 2)
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

// TestPetAddedOverSSE: the same subscription over Server-Sent Events, with the rate-limit
// headers; a request without a key gets the JSON Error body with 401.
func TestPetAddedOverSSE(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp := s.sseStream(t, ctx, s.key, "")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
			resp.Header.Get("X-RateLimit-Limit") == "" {
			t.Fatalf("SSE answer: %d %v", resp.StatusCode, resp.Header)
		}
		events := sseEvents(resp.Body)
		s.waitActive(t, 1)
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

// TestPetAddedAcrossInstances: with Redis (a single server, and a Redis Cluster), a pet
// created on instance A reaches a subscriber on instance B at once, not at B's poll.
func TestPetAddedAcrossInstances(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t *testing.T) (url, prefix string){
		"single": func(t *testing.T) (string, string) {
			_, prefix := dbtest.Redis(t) // skips or fails when unreachable; deleted at the end
			return dbtest.RedisURL(), prefix
		},
		"cluster": func(t *testing.T) (string, string) { return dbtest.NewRedisCluster(t).URL(), "test:" }, // the test's own
	}
	for name, redisOf := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := app.DefaultConfig()
			cfg.RedisURL, cfg.RedisKeyPrefix = redisOf(t)
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
	t.Parallel()
	c := dbtest.NewRedisCluster(t)
	cfg := app.DefaultConfig()
	cfg.RedisURL = c.URL()
	cfg.RedisKeyPrefix = "test:" + fmt.Sprint(time.Now().UnixNano()) + ":"
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
	owner, err := rdbs[0].(*redis.ClusterClient).MasterForKey(context.Background(), cfg.RedisKeyPrefix+app.LiveChannel)
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
	t.Parallel()
	db := dbtest.New(t, migrations.MySQL)
	s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
	s.createPet(t, s.key, "first", "") // pet 1, before the subscription
	w := s.connect(t, s.key)
	w.subscribe("all", "")
	s.waitActive(t, 1)
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
