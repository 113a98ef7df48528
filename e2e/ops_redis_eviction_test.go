package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/testkit/dbtest"
)

// evictionPolicy is the maxmemory-policy that docs/operations.md gives the service's Redis.
const evictionPolicy = "allkeys-lru"

// watchedLimit is the day's budget of the key that TestRedisEviction watches.
const watchedLimit = 60

// awayFromDayEdge waits out the UTC day when less than 5 minutes of it are left, so that a
// test counting requests against a day's budget stays within one day window.
func awayFromDayEdge(t testing.TB) {
	t.Helper()
	now := time.Now().UTC()
	if left := now.Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(now); left < 5*time.Minute {
		time.Sleep(left + 50*time.Millisecond)
	}
}

// TestRedisEviction runs an instance on a Redis of the test's own started as docs/operations.md
// says, maxmemory (4 MiB here, some 3 MiB over an empty server's own use) with
// maxmemory-policy allkeys-lru, and floods it with twice that: requests without a key from
// 12,000 client addresses (a rate-limit hash each, kept until the end of its UTC day) and 800
// persisted queries of 6 KiB. Redis evicts, and:
//   - Redis refuses no write (no rate-limit store or cap errors);
//   - requests without a key are all answered 401 (each address's first), the queries 200;
//   - a key of 60 requests a day that sends 100 through the flood has exactly 60 admitted:
//     its hash, used all along, is never the least recently used;
//   - an SSE subscription opened before the flood gets the pet added after it.
//
// Under noeviction the same flood fails writes with OOM, so the key's requests are admitted
// uncounted (failing open) and the counts above do not hold.
func TestRedisEviction(t *testing.T) {
	t.Parallel()
	r := dbtest.NewRedisServer(t, "--maxmemory", "4mb", "--maxmemory-policy", evictionPolicy)
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	cfg := app.DefaultConfig()
	cfg.RedisURL = r.URL()
	cfg.TrustedProxies = []string{"127.0.0.1"}
	s := sharedInstances(t, dbtest.New(t, "mysql"), cfg, 1)[0]
	flooder := s.newKey(t, auth.Business.Name) // 1,000 a minute: room for the flood's queries
	// Counted by its day, which a loaded machine's slow flood cannot cross as it could a minute.
	watched, _, err := auth.CreateKey(context.Background(), s.db.DB, auth.PrefixFor(s.cfg.Env),
		auth.KeySpec{Plan: auth.Enterprise, PerMinute: 100000, PerDay: watchedLimit})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := sseEvents(s.sseStream(t, ctx, flooder, "").Body)
	s.waitActive(t, 1)
	awayFromDayEdge(t)

	const addresses, queryEvery, watchedEvery = 12000, 15, 120 // 800 queries, 100 requests of the watched key
	var mu sync.Mutex
	statuses := map[string]int{} // "what status" -> count
	record := func(what string, status int) {
		mu.Lock()
		statuses[fmt.Sprintf("%s %d", what, status)]++
		mu.Unlock()
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				record("anonymous", anonymousGet(s.url, fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255)))
				if i%queryEvery == 0 {
					record("persisted query", persistQuery(s.url, flooder))
				}
				if i%watchedEvery == 0 {
					record("watched key", getWithKey(s.url, watched))
				}
			}
		})
	}
	for i := range addresses {
		work <- i
	}
	close(work)
	wg.Wait()

	info, err := admin.Info(context.Background(), "stats", "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("answers: %v; Redis: %s, %s", statuses, infoField(info, "evicted_keys"), infoField(info, "used_memory_human"))
	if infoField(info, "evicted_keys") == "0" {
		t.Fatal("Redis evicted nothing: the flood did not fill it")
	}
	for what, n := range statuses {
		if what != "anonymous 401" && what != "persisted query 200" && what != "watched key 200" && what != "watched key 429" {
			t.Errorf("%d answers %s", n, what)
		}
	}
	if refused := addresses/watchedEvery - watchedLimit; statuses["watched key 200"] != watchedLimit || statuses["watched key 429"] != refused {
		t.Errorf("the watched key: %d admitted, %d refused; want %d and %d", statuses["watched key 200"], statuses["watched key 429"], watchedLimit, refused)
	}
	for _, m := range []string{"petstore_ratelimit_store_errors_total", "petstore_subscription_cap_errors_total"} {
		if v := metricValue(t, s, m); v != 0 {
			t.Errorf("%s %v; want no failed call to Redis", m, v)
		}
	}
	id := s.createPet(t, flooder, "after the flood", "")
	if e := nextPet(t, events); !strings.Contains(e, fmt.Sprintf(`"id":"%d"`, id)) {
		t.Errorf("the stream opened before the flood: %q; want the pet %d", e, id)
	}
}

// TestRedisKeys: every key an instance writes in Redis is one of those that docs/operations.md
// lists, all under the key prefix (rl: by default): a key's and an address's counts, a key's
// leases, a persisted query.
func TestRedisKeys(t *testing.T) {
	t.Parallel()
	r := dbtest.NewRedisServer(t)
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	cfg := app.DefaultConfig()
	cfg.RedisURL = r.URL()
	s := sharedInstances(t, dbtest.New(t, "sqlite"), cfg, 1)[0]
	w := s.connect(t, s.key)
	w.subscribe("1", "")
	s.waitActive(t, 1)
	if status := persistQuery(s.url, s.key); status != http.StatusOK {
		t.Fatalf("persisted query: %d", status)
	}
	if status := anonymousGet(s.url, ""); status != http.StatusUnauthorized {
		t.Fatalf("without a key: %d", status)
	}
	keys, err := admin.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]*regexp.Regexp{
		"a key's counts":      regexp.MustCompile(`^\{rl:k:[0-9]+\}$`),
		"an address's counts": regexp.MustCompile(`^\{rl:a:127\.0\.0\.1\}$`),
		"a key's leases":      regexp.MustCompile(`^\{rl:live:k:[0-9]+\}:(conns|subs)$`),
		"a persisted query":   regexp.MustCompile(`^rl:apq:[0-9a-f]{3}$`),
	}
	seen := map[string]bool{}
	for _, k := range keys {
		kind := ""
		for what, re := range documented {
			if re.MatchString(k) {
				kind = what
			}
		}
		if kind == "" {
			t.Errorf("Redis key %q is none of those docs/operations.md lists", k)
		}
		seen[kind] = true
	}
	for what := range documented {
		if !seen[what] {
			t.Errorf("no key for %s among %v", what, keys)
		}
	}
}

// nextPet returns the next event of events past the stream's comments (its pings): the next
// pet, or what ended the stream.
func nextPet(t *testing.T, events <-chan string) string {
	t.Helper()
	for {
		if e := recvEvent(t, events); !strings.HasPrefix(e, ": ") {
			return e
		}
	}
}

// anonymousGet returns the status of GET /v1/pets without a key, from the client address addr
// when it is not "" (X-Forwarded-For, believed from a loopback proxy), 0 when it got no answer.
func anonymousGet(base, addr string) int {
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/pets?limit=1", nil)
	if addr != "" {
		req.Header.Set("X-Forwarded-For", addr)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// persistQuery registers a new automatic persisted query of some 6 KiB (a comment makes each
// one distinct) with key and returns the status, or 500 when the answer carries errors.
func persistQuery(base, key string) int {
	query := "{ __typename }\n# " + strings.Repeat(rand.Text(), 230)
	sum := sha256.Sum256([]byte(query))
	body, _ := json.Marshal(map[string]any{"query": query, "extensions": map[string]any{
		"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/graphql", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var out struct{ Errors []any }
	if json.NewDecoder(resp.Body).Decode(&out) != nil || len(out.Errors) > 0 {
		return 500
	}
	return resp.StatusCode
}

// infoField returns the value of field in the text of Redis's INFO.
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
