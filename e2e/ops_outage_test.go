package e2e

import (
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"petstore/app"
	"petstore/auth"
	"petstore/testkit/dbtest"
)

// outageClient is one client of TestOutageUnderLoad: its key ("" for none, or a fresh guess
// per request when guess is set) and its address.
type outageClient struct {
	name, key, addr string
	guess           bool
	fromCut         bool // sends nothing before the cut
}

// outageLog counts the statuses each client got in each phase.
type outageLog struct {
	mu     sync.Mutex
	counts map[string]map[string]map[int]int // client -> phase -> status -> count
}

func (l *outageLog) add(client, phase string, status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts[client] == nil {
		l.counts[client] = map[string]map[int]int{}
	}
	if l.counts[client][phase] == nil {
		l.counts[client][phase] = map[int]int{}
	}
	l.counts[client][phase][status]++
}

// statuses returns the statuses client got in phase.
func (l *outageLog) statuses(client, phase string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for s := range l.counts[client][phase] {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// count returns how many 401s client got in phase.
func (l *outageLog) count(client, phase string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[client][phase][http.StatusUnauthorized]
}

// outageLength is how long TestOutageUnderLoad cuts the database: 3 s in make test (key cache
// 1 s), PETSTORE_TEST_OUTAGE (30s in make outage-test, with the default key cache of 10 s).
func outageLength(t *testing.T) time.Duration {
	v := os.Getenv("PETSTORE_TEST_OUTAGE")
	if v == "" {
		return 3 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("PETSTORE_TEST_OUTAGE: %v", err)
	}
	return d
}

// TestOutageUnderLoad cuts the database for longer than the key cache while clients keep
// sending: valid keys (warm, and one never used before the cut) behind one proxy address,
// requests without a key from another address, and fresh guesses from a third. During the cut
// and after it, keyed clients get only 200 or 503 (with Retry-After), never 401 or 429: an
// outage charges no address and suspends nobody. Requests without a key keep their per-address
// budget (401, then 429); guesses during the cut are 503 and charged to nobody; they cost at most about one key-table read a second; once the
// database is back, every keyed client is served again within two seconds.
func TestOutageUnderLoad(t *testing.T) {
	cut := outageLength(t)
	quiet(t)
	db, proxy := dbtest.Proxied(t)
	cfg := app.DefaultConfig()
	if cut < 3*auth.DefaultCacheTTL {
		cfg.KeyCacheTTL = cut / 3
	}
	api := newTestAPIConfig(t, db, cfg)
	spec := auth.KeySpec{Plan: "enterprise", PerMinute: 100_000, PerDay: 1_000_000}
	const proxyAddr = "203.0.113.9:4000"
	clients := []outageClient{
		{name: "warm1", key: api.createKey(t, spec), addr: proxyAddr},
		{name: "warm2", key: api.createKey(t, spec), addr: proxyAddr},
		{name: "cold", key: api.createKey(t, spec), addr: proxyAddr, fromCut: true},
		{name: "anonymous", addr: "198.51.100.7:4000"},
		{name: "guesser", addr: "198.51.100.8:4000", guess: true},
		{name: "guesser2", addr: "198.51.100.9:4000", guess: true, fromCut: true},
	}
	reads := countTableReads(t, db.DB, "api_keys")
	log := &outageLog{counts: map[string]map[string]map[int]int{}}
	var phase struct {
		sync.Mutex
		name string
	}
	setPhase := func(p string) { phase.Lock(); phase.name = p; phase.Unlock() }
	getPhase := func() string { phase.Lock(); defer phase.Unlock(); return phase.name }
	setPhase("before")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Go(func() { outageLoad(t, api, cl, log, getPhase, stop) })
	}
	time.Sleep(cfg.KeyCacheTTL / 2)
	setPhase("cut")
	proxy.Cut()
	readsAtCut := reads.Load()
	time.Sleep(cut)
	readsDuringCut := reads.Load() - readsAtCut
	proxy.Restore()
	setPhase("recovery") // the first two seconds after the database is back
	time.Sleep(2 * time.Second)
	setPhase("after")
	after := min(cut*2, time.Minute)
	time.Sleep(after)
	close(stop)
	wg.Wait()

	for _, cl := range clients {
		c := log.counts[cl.name]
		t.Logf("%-9s before %v, cut %v, boundary %v, recovery %v, after %v", cl.name, c["before"], c["cut"],
			c["boundary"], c["recovery"], c["after"])
	}
	t.Logf("key-table reads during the %v cut: %d", cut, readsDuringCut)
	for _, cl := range clients[:3] {
		for _, p := range []string{"cut", "recovery"} {
			for _, s := range log.statuses(cl.name, p) {
				if s != http.StatusOK && s != http.StatusServiceUnavailable {
					t.Errorf("%s during the %s: got status %d; want only 200 or 503", cl.name, p, s)
				}
			}
		}
		if got := log.statuses(cl.name, "after"); !slices.Equal(got, []int{http.StatusOK}) {
			t.Errorf("%s after recovery: got statuses %v; want only 200", cl.name, got)
		}
	}
	for _, p := range []string{"before", "cut", "recovery", "after"} {
		for _, s := range log.statuses("anonymous", p) {
			if s != http.StatusUnauthorized && s != http.StatusTooManyRequests {
				t.Errorf("anonymous during %s: got %d; want 401 or 429", p, s)
			}
		}
		for _, s := range log.statuses("guesser", p) {
			if s != http.StatusUnauthorized && s != http.StatusTooManyRequests && (p != "cut" || s != http.StatusServiceUnavailable) {
				t.Errorf("guesser during %s: got %d", p, s)
			}
		}
	}
	// Guesses that could not be checked were charged to nobody: the address starts the
	// recovery with its whole budget of 401s (and no suspension).
	if got := log.statuses("guesser2", "cut"); !slices.Equal(got, []int{http.StatusServiceUnavailable}) {
		t.Errorf("guesser2 during the cut: got %v; want only 503", got)
	}
	// A guess begun in the cut and answered after it (the boundary) was checked, and spends the
	// budget like the later ones.
	n := log.count("guesser2", "boundary") + log.count("guesser2", "recovery") + log.count("guesser2", "after")
	if n < int(cfg.RateLimit.AnonymousPerMinute) {
		t.Errorf("guesser2 after the cut: got %d 401s; want at least its budget of %d", n, cfg.RateLimit.AnonymousPerMinute)
	}
	if limit := int64(cut/time.Second)*2 + 10; readsDuringCut > limit {
		t.Errorf("key-table reads during the cut: got %d; want at most %d", readsDuringCut, limit)
	}
}

// outageLoad sends GET /v1/pets as cl every 20 ms until stop, logging each status by phase
// (a request that spans the change of phase under "boundary") and checking that every 503 carries Retry-After and every 429 comes with its reason.
func outageLoad(t *testing.T, api *testAPI, cl outageClient, log *outageLog, phase func() string, stop chan struct{}) {
	for cl.fromCut && phase() == "before" {
		time.Sleep(5 * time.Millisecond)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		r := httptest.NewRequest(http.MethodGet, "/v1/pets?limit=1", nil)
		r.RemoteAddr = cl.addr
		switch {
		case cl.guess:
			r.Header.Set("Authorization", "Bearer "+auth.NewKey(auth.PrefixFor(api.cfg.Env)))
		case cl.key != "":
			r.Header.Set("Authorization", "Bearer "+cl.key)
		}
		p := phase()
		rec := httptest.NewRecorder()
		api.h.ServeHTTP(rec, r)
		if phase() != p {
			p = "boundary" // begun in one phase and answered in the next: held to neither's rules
		}
		log.add(cl.name, p, rec.Code)
		if rec.Code == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s: a 503 without Retry-After", cl.name)
		}
		if rec.Code == http.StatusTooManyRequests && cl.key != "" {
			t.Errorf("%s during %s: got 429 %s", cl.name, p, strings.TrimSpace(rec.Body.String()))
		}
	}
}

// quiet silences, for t, the log lines of the thousands of failed requests: the service's
// (slog) and the MySQL driver's.
func quiet(t *testing.T) {
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	_ = mysqldriver.SetLogger(mysqldriver.Logger(stdlog.New(io.Discard, "", 0)))
	t.Cleanup(func() {
		slog.SetDefault(prev)
		_ = mysqldriver.SetLogger(stdlog.New(os.Stderr, "[mysql] ", stdlog.Ldate|stdlog.Ltime|stdlog.Lshortfile))
	})
}

// countTableReads counts the queries db runs against table.
func countTableReads(t *testing.T, db *gorm.DB, table string) *atomic.Int64 {
	t.Helper()
	n := new(atomic.Int64)
	err := db.Callback().Query().Before("gorm:query").Register(fmt.Sprintf("test:count_%s_reads", table), func(tx *gorm.DB) {
		if tx.Statement.Table == table {
			n.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
