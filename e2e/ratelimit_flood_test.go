package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/config"
	"petstore/ratelimit"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// natServer is the whole service behind a trusted proxy (the test itself, on loopback), so
// that each request names its client address in X-Forwarded-For.
type natServer struct {
	url    string
	client *http.Client
}

// newNATServer serves the service over db (and Redis when rdb is not nil), trusting the
// X-Forwarded-For of loopback peers.
func newNATServer(t *testing.T, cfg config.Config, db *store.DB, rdb redis.UniversalClient) *natServer {
	t.Helper()
	cfg.TrustedProxies = []string{"127.0.0.0/8", "::1/128"}
	svc, err := app.New(cfg, db, rdb, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(func() { svc.CloseStreams(); srv.Close(); tr.CloseIdleConnections() })
	return &natServer{url: srv.URL, client: &http.Client{Transport: tr, Timeout: 20 * time.Second}}
}

// get sends GET /v1/pets from the client address addr with key ("" for none), and returns the
// answer's status and X-RateLimit-Limit.
func (s *natServer) get(t testing.TB, addr, key string) (status int, limit string) {
	req, err := http.NewRequest(http.MethodGet, s.url+"/v1/pets", nil)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	req.Header.Set("X-Forwarded-For", addr)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-RateLimit-Limit")
}

// openSocket opens a graphql-transport-ws socket from the client address addr with key in the
// upgrade's Authorization header when inHeader, else in connection_init, and returns nil once
// connection_ack arrives, or why it did not.
func (s *natServer) openSocket(t testing.TB, addr, key string, inHeader bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   http.Header{"X-Forwarded-For": {addr}},
	}
	payload := fmt.Sprintf(`{"Authorization":"Bearer %s"}`, key)
	if inHeader {
		opts.HTTPHeader.Set("Authorization", "Bearer "+key)
		payload = `{}`
	}
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/v1/graphql", opts)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("upgrade: %d", resp.StatusCode)
		}
		return err
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init","payload":`+payload+`}`)); err != nil {
		return err
	}
	_, b, err := c.Read(ctx)
	if err != nil {
		return fmt.Errorf("close %d: %w", websocket.CloseStatus(err), err)
	}
	if !strings.Contains(string(b), `"connection_ack"`) {
		return fmt.Errorf("got %s; want connection_ack", b)
	}
	return nil
}

// flood sends GET /v1/pets with a fresh well-formed key (a valid checksum, naming no key) from
// the client address addr at about rate a second, on workers goroutines, until the function it
// returns is called; that returns how many were sent and how many got each status.
func (s *natServer) flood(t testing.TB, addr string, rate, workers int) (stop func() (sent int64, statuses map[int]int64)) {
	var (
		done  = make(chan struct{})
		wg    sync.WaitGroup
		sent  atomic.Int64
		mu    sync.Mutex
		codes = map[int]int64{}
	)
	every := time.Duration(workers) * time.Second / time.Duration(rate)
	start := time.Now()
	for i := range workers {
		wg.Go(func() {
			mine := map[int]int64{}
			defer func() {
				mu.Lock()
				defer mu.Unlock()
				for code, n := range mine {
					codes[code] += n
				}
			}()
			for next := start.Add(time.Duration(i) * every / time.Duration(workers)); ; next = next.Add(every) {
				select {
				case <-done:
					return
				case <-time.After(time.Until(next)):
				}
				status, _ := s.get(t, addr, auth.NewKey(auth.TestPrefix))
				mine[status]++
				sent.Add(1)
			}
		})
	}
	return func() (int64, map[int]int64) {
		close(done)
		wg.Wait()
		return sent.Load(), codes
	}
}

// TestValidKeysServedDuringGuessFlood is the attack of issue 35: one client whose address is
// over its anonymous budget sends fresh well-formed keys at about 2,000 a second, 20 times the
// instance's over-budget reads (100 a second), while 30 valid keys that the instance has never
// seen (a fresh instance: after a restart or a rollout every key is) arrive from another
// address over its budget (a busy NAT): 20 on REST requests, 5 in WebSocket upgrades and 5 in
// connection_init. Every valid key is served on its own budget, and the NAT's address stays
// over its budget; every guess gets its address's 429, and the guesses cost at most the
// over-budget reads and the refreshes of the instance's set of valid keys. A key created after
// the set was loaded, sent 1.5 s later during the flood, is served too.
func TestValidKeysServedDuringGuessFlood(t *testing.T) {
	const (
		nat     = "198.51.100.20"
		guesser = "203.0.113.20"
		rate    = 2000
		natKeys = 30
	)
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		for _, limiter := range []string{"memory", "redis"} {
			t.Run(limiter, func(t *testing.T) {
				cfg := app.DefaultConfig()
				var rdb redis.UniversalClient
				if limiter == "redis" {
					rdb, cfg.RedisKeyPrefix = dbtest.Redis(t)
				}
				api := &testAPI{db: db, cfg: cfg}
				keys := make([]string, natKeys)
				for i := range keys {
					keys[i] = api.createKey(t, auth.KeySpec{Plan: "free"})
				}
				s := newNATServer(t, cfg, db, rdb) // a fresh instance over those keys
				awayFromMinuteEdge(t)

				// Both addresses spend their anonymous budget: the guesser with guesses, the NAT
				// with requests without a key.
				for range cfg.RateLimit.AnonymousPerMinute {
					if status, _ := s.get(t, guesser, auth.NewKey(auth.TestPrefix)); status != http.StatusUnauthorized {
						t.Fatalf("a guess within budget: got %d; want 401", status)
					}
					if status, _ := s.get(t, nat, ""); status != http.StatusUnauthorized {
						t.Fatalf("a request without a key within budget: got %d; want 401", status)
					}
				}
				if status, _ := s.get(t, guesser, auth.NewKey(auth.TestPrefix)); status != http.StatusTooManyRequests {
					t.Fatalf("a guess over budget: got %d; want 429", status)
				}
				late := api.createKey(t, auth.KeySpec{Plan: "pro"}) // after the set was loaded

				pool := countStatements(db.DB)
				start := time.Now()
				stop := s.flood(t, guesser, rate, 16)
				time.Sleep(200 * time.Millisecond) // the over-budget reads are spent
				served := 0
				for i, key := range keys {
					var err error
					switch {
					case i < 20:
						if status, limit := s.get(t, nat, key); status != http.StatusOK || limit != "60" {
							err = fmt.Errorf("got %d with limit %q; want 200 on its own budget (60)", status, limit)
						}
					default:
						err = s.openSocket(t, nat, key, i%2 == 0)
					}
					if err != nil {
						t.Errorf("NAT key %d during the flood: %v", i+1, err)
					} else {
						served++
					}
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
				lateStatus, lateLimit := s.get(t, nat, late)
				time.Sleep(200 * time.Millisecond)
				sent, statuses := stop()
				elapsed := time.Since(start)
				reads := pool.hashReads.Load()

				t.Logf("served %d/%d NAT keys during %d guesses in %v (%.0f/s; statuses %v); late key %d; %d reads of key hashes",
					served, natKeys, sent, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), statuses, lateStatus, reads)
				if lateStatus != http.StatusOK || lateLimit != "300" {
					t.Errorf("a key created after the set was loaded, sent 1.5 s later during the flood: got %d with limit %q; want 200 on its own budget (300)",
						lateStatus, lateLimit)
				}
				if status, _ := s.get(t, nat, ""); status != http.StatusTooManyRequests {
					t.Errorf("the NAT's address after its keys were served: got %d; want 429 (still over its budget)", status)
				}
				if statuses[http.StatusTooManyRequests] != sent {
					t.Errorf("guesses over budget: got statuses %v; want all %d 429", statuses, sent)
				}
				if least := int64(rate * elapsed.Seconds() / 2); sent < least {
					t.Errorf("the flood sent %d guesses in %v; want at least %d (half its rate)", sent, elapsed, least)
				}
				// The over-budget reads (their burst, then their rate), the set's refreshes (one a
				// second), and one lookup for each valid key: the reads of keys' hashes.
				secs := elapsed.Seconds()
				over := float64(ratelimit.DefaultConfig().OverBudgetKeyReads)
				if most := int64(over+over*secs+1+secs/auth.ListRefresh.Seconds()) + natKeys + 1 + 1; reads > most {
					t.Errorf("key-table reads during the flood: got %d; want at most %d", reads, most)
				}
			})
		}
	})
}
