package e2e

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/app"
	"petstore/testkit/dbtest"
)

// TestGCTuningAsShipped runs the program as a process and reads its heap goal from /metrics
// after some load. With GOGC unset the goal is the heap floor, though far less is live (a
// service whose GC tuning was lost would show a goal of a few MiB); with GOGC set the
// collector is left to it.
func TestGCTuningAsShipped(t *testing.T) {
	for _, tc := range []struct {
		gogc     string
		min, max float64
	}{
		{gogc: "", min: app.HeapFloor * 0.95, max: app.HeapFloor * 1.05},
		{gogc: "100", min: 0, max: app.HeapFloor / 2},
	} {
		t.Run("GOGC="+tc.gogc, func(t *testing.T) {
			dsn := dbtest.DSN(t, "sqlite")
			if _, err := runCmd(t, dsn, "migrate"); err != nil { // here, not in the process: goose's 12 MiB of parsing buffers would be live at its first collection
				t.Fatal(err)
			}
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
					env = append(env, kv)
				}
			}
			if tc.gogc != "" {
				env = append(env, "GOGC="+tc.gogc)
			}
			_, base, _ := startServe(t, append(env, "PETSTORE_DB="+dsn, "PETSTORE_ENV=development", "PETSTORE_LOG_LEVEL=error")...)

			// Requests until the process has collected twice (the goal after the first
			// collection is the first one set by the tuning) and, with GOGC unset, until the
			// goal is the floor: the tuning runs on the runtime's cleanup goroutine after each
			// collection, which a loaded machine may run late. A lost tuning never gets there.
			var goal float64
			for deadline := time.Now().Add(20 * time.Second); ; {
				for range 200 {
					resp, err := http.Get(base + "/v1/openapi.json")
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				m := scrape(t, base)
				goal = m["go_memstats_next_gc_bytes"]
				if m["go_gc_duration_seconds_count"] >= 2 && (tc.gogc != "" || goal >= tc.min) {
					break
				}
				if time.Now().After(deadline) {
					if m["go_gc_duration_seconds_count"] < 2 {
						t.Fatalf("no two collections within 20 s; %v so far", m["go_gc_duration_seconds_count"])
					}
					break
				}
			}
			if goal < tc.min || goal > tc.max {
				t.Errorf("heap goal %.1f MiB; want %.1f to %.1f MiB", goal/(1<<20), tc.min/(1<<20), tc.max/(1<<20))
			}
		})
	}
}

// scrape returns the values of the unlabelled series of base's /metrics.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		name, value, ok := strings.Cut(lines.Text(), " ")
		if v, err := strconv.ParseFloat(value, 64); ok && err == nil && !strings.HasPrefix(name, "#") {
			m[name] = v
		}
	}
	return m
}
