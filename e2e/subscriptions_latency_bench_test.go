package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"petstore/app"
	"petstore/auth"
	"petstore/testkit/dbtest"
)

// The delivery latency of petAdded to 1,000 subscribers. Run:
//
//	go test -run '^$' -bench 'PetAddedLatency' -benchtime 1x ./e2e/

// latencyPets is how many pets BenchmarkPetAddedLatency adds per iteration, one every 100 ms:
// 50 pets to 1,000 subscribers are 50,000 arrivals, of which the p99 is the 500th slowest.
const latencyPets = 50

// BenchmarkPetAddedLatency reports the time from a pet's commit (when its INSERT returned) to its
// event at each of 1,000 subscribers, one pet every 100 ms, over WebSocket (graphql-transport-ws)
// and over Server-Sent Events: p50 and p99; post-p99, from just before the REST POST; first-p50, to
// each pet's first subscriber (the Hub's wake-up and read); spread-p99, after it (the sweep over
// the other subscribers). It reports too the server's CPU time, allocations and bytes per event
// delivered, and the subscribers' CPU time (client-cpu), which do not depend on what else the
// machine runs. The subscribers run in a process of their own (TestLatencyClientsHelper), as
// clients on other machines do; each reads and parses every message and notes its pet's time of
// arrival, without allocating per event.
func BenchmarkPetAddedLatency(b *testing.B) {
	b.Run("ws", func(b *testing.B) { petAddedLatency(b, "ws") })
	b.Run("sse", func(b *testing.B) { petAddedLatency(b, "sse") })
}

// petAddedLatency is BenchmarkPetAddedLatency over transport, ws or sse.
func petAddedLatency(b *testing.B, transport string) {
	const subscribers = 1000
	db := dbtest.New(b, "sqlite")
	commits := clockCommits(db.DB)
	s := newLiveServer(b, db, nil, app.DefaultConfig(), "business")
	key, _, err := auth.CreateKey(context.Background(), db.DB, auth.PrefixFor(s.cfg.Env),
		auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	want := latencyPets * b.N
	cmd := exec.Command(os.Args[0], "-test.run=^TestLatencyClientsHelper$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%d,%d,%s", latencyClientsEnv,
		strings.TrimPrefix(s.url, "http://"), transport, subscribers, want, key))
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		b.Fatalf("helper: %q", lines.Text())
	}
	for activeSubscriptions(b, s.url) < subscribers {
		time.Sleep(50 * time.Millisecond)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	sent := map[int64]time.Time{}
	b.ResetTimer()
	for range b.N {
		for j := range latencyPets {
			t0 := time.Now()
			sent[s.createPet(b, s.key, fmt.Sprint("lat", j), "")] = t0
			time.Sleep(100 * time.Millisecond)
		}
	}
	var (
		lat      = make([]time.Duration, 0, subscribers*want) // from the commit
		fromPOST = make([]time.Duration, 0, subscribers*want) // from just before the POST
		first    = map[int64]time.Time{}                      // each pet's earliest arrival
		arrived  []struct {
			id int64
			at time.Time
		}
		clientCPU time.Duration
	)
	for lines.Scan() { // once every subscriber has read its events
		var id, ns int64
		if v, ok := strings.CutPrefix(lines.Text(), "cpu "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			clientCPU = time.Duration(n)
			continue
		}
		if lines.Text() == "PASS" { // the test binary's last word
			continue
		}
		if _, err := fmt.Sscan(lines.Text(), &id, &ns); err != nil {
			b.Fatalf("helper: %q", lines.Text())
		}
		at := time.Unix(0, ns)
		arrived = append(arrived, struct {
			id int64
			at time.Time
		}{id, at})
		lat = append(lat, at.Sub(commits.at(id)))
		fromPOST = append(fromPOST, at.Sub(sent[id]))
		if f, ok := first[id]; !ok || at.Before(f) {
			first[id] = at
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&m1)
	if len(lat) == 0 {
		b.Fatal("no event delivered")
	}
	// The latency splits in two: to the first subscriber (the Hub's wake-up and read after
	// the commit), then the sweep over the others (the spread after the first).
	var firsts, spread []time.Duration
	for id, f := range first {
		firsts = append(firsts, f.Sub(commits.at(id)))
	}
	for _, a := range arrived {
		spread = append(spread, a.at.Sub(first[a.id]))
	}
	n := float64(len(lat))
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(ms(percentile(fromPOST, 99)), "post-p99-ms")
	b.ReportMetric(ms(percentile(firsts, 50)), "first-p50-ms")
	b.ReportMetric(ms(percentile(spread, 99)), "spread-p99-ms")
	b.ReportMetric(n/float64(subscribers*want), "delivered")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/delivery")
	b.ReportMetric(float64(clientCPU.Microseconds())/n, "client-cpu-µs/delivery")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/delivery")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/delivery")
}

// commitClock is a GORM connection pool that notes when each pet's INSERT returned: outside a
// transaction, the moment it committed.
type commitClock struct {
	gorm.ConnPool
	mu sync.Mutex
	by map[int64]time.Time
}

// clockCommits makes db note the commit time of each pet it inserts outside a transaction
// (the REST POSTs without Idempotency-Key of BenchmarkPetAddedLatency).
func clockCommits(db *gorm.DB) *commitClock {
	c := &commitClock{ConnPool: db.Statement.ConnPool, by: map[int64]time.Time{}}
	db.ConnPool, db.Statement.ConnPool = c, c
	return c
}

func (c *commitClock) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := c.ConnPool.ExecContext(ctx, query, args...)
	if err == nil && strings.HasPrefix(query, "INSERT INTO pets ") {
		at := time.Now()
		if id, err := res.LastInsertId(); err == nil {
			c.mu.Lock()
			c.by[id] = at
			c.mu.Unlock()
		}
	}
	return res, err
}

// GetDBConn gives GORM the pool's *sql.DB, as the wrapped pool does.
func (c *commitClock) GetDBConn() (*sql.DB, error) {
	if p, ok := c.ConnPool.(interface{ GetDBConn() (*sql.DB, error) }); ok {
		return p.GetDBConn()
	}
	return c.ConnPool.(*sql.DB), nil
}

// at returns when the pet with id committed.
func (c *commitClock) at(id int64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[id]
}

// percentile returns the p-th percentile of d, which it sorts.
func percentile(d []time.Duration, p int) time.Duration {
	slices.Sort(d)
	return d[len(d)*p/100]
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
