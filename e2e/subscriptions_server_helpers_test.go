package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/config"
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
	key, _, err := auth.CreateKey(context.Background(), s.db.DB, auth.PrefixFor(s.cfg.Env), auth.KeySpec{Plan: plan})
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

// sharedInstances serves n instances of the service over db, each with a Redis client of its
// own made by openRedis from cfg.RedisURL, and a business key for writing pets.
func sharedInstances(t *testing.T, db *store.DB, cfg config.Config, n int) []*liveServer {
	t.Helper()
	var insts []*liveServer
	for range n {
		rdb, err := app.OpenRedis(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		insts = append(insts, newLiveServer(t, db, rdb, cfg, "business"))
	}
	return insts
}

// burstPets inserts n pets of some 200-byte names in one statement, then one over REST with
// key, which wakes the Hub; it returns the last one's id.
func burstPets(t *testing.T, s *liveServer, db *store.DB, n int) int64 {
	t.Helper()
	if err := db.DB.Exec(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n WHERE x < ?)
		INSERT INTO pets (name, category_id, status) SELECT hex(randomblob(100)), 1, 'available' FROM n`, n).Error; err != nil {
		t.Fatal(err)
	}
	return s.createPet(t, s.key, "wake", "")
}

// cursorOf returns the cursor of the pet with id, as petsConnection gives it.
func cursorOf(id int64) string { return models.EncodeCursor(id) }

// metricsText returns the /metrics page, read on a connection of its own: a kept-alive one
// that the server has since closed (after a flood, say) would end the read with EOF.
func metricsText(t testing.TB, base string) string {
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// activeSubscriptions reads petstore_subscriptions_active from /metrics.
func activeSubscriptions(tb testing.TB, base string) int {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "petstore_subscriptions_active "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return 0
}

// cutOffSlow returns petstore_subscribers_cut_off_total{reason="slow"}.
func cutOffSlow(t *testing.T, base string) int {
	t.Helper()
	for line := range strings.SplitSeq(metricsText(t, base), "\n") {
		if v, ok := strings.CutPrefix(line, `petstore_subscribers_cut_off_total{reason="slow"} `); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
}

// waitActive waits, at most 10 s, until n subscriptions are active on s: a subscription counted
// active gets every pet added after.
func (s *liveServer) waitActive(t *testing.T, n int) {
	t.Helper()
	within(t, 10*time.Second, fmt.Sprint(n, " subscriptions active"), func() bool { return activeSubscriptions(t, s.url) == n })
}

// freedSoon is how soon a slot let go must be free on every instance: at once, as a close removes
// its lease; the bound allows for a loaded machine and stays well short of conns.LeaseFor, after
// which an abandoned lease would free it as well.
const freedSoon = 3 * time.Second

// within tries ok every 100 ms for up to d, failing t when it never holds: what says what
// was awaited.
func within(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > d {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
}
