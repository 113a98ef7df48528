package main

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// These tests cover the soak's own logic; they need no server and run in `make test`.

func TestParseFlagsSmokeKeepsExplicitFlags(t *testing.T) {
	o, err := parseFlags([]string{"-smoke", "-workers", "4"})
	if err != nil {
		t.Fatal(err)
	}
	if o.duration != 20*time.Second || o.outage != 2*time.Second || o.warmup != 5*time.Second || o.workers != 4 || !o.restart {
		t.Errorf("-smoke -workers 4: got %+v", o)
	}
	if _, err := parseFlags([]string{"-duration", "10s"}); err == nil {
		t.Error("a warm-up (20s) longer than the duration was accepted")
	}
}

func TestRetryDelay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for attempt, want := range []time.Duration{backoffBase, 2 * backoffBase, 4 * backoffBase} {
		if d := retryDelay(attempt, http.Header{}, rng); d < want/2 || d > want {
			t.Errorf("attempt %d: %v; want in [%v, %v]", attempt, d, want/2, want)
		}
	}
	if d := retryDelay(100, http.Header{}, rng); d < backoffMax/2 || d > backoffMax {
		t.Errorf("attempt 100: %v; want capped at %v", d, backoffMax)
	}
	if d := retryDelay(0, http.Header{"Retry-After": {"3"}}, rng); d != 3*time.Second {
		t.Errorf("Retry-After: 3 gave %v", d)
	}
}

func TestRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "1": time.Second, "-1": 0, "soon": 0,
		"Thu, 01 Jan 1970 00:00:00 GMT": 0} {
		if got := retryAfter(http.Header{"Retry-After": {v}}); got != want {
			t.Errorf("Retry-After %q: %v; want %v", v, got, want)
		}
	}
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	if got := retryAfter(http.Header{"Retry-After": {future}}); got < 59*time.Minute {
		t.Errorf("Retry-After an hour ahead: %v", got)
	}
}

func TestStatusOf(t *testing.T) {
	timeout := &timeoutErr{}
	for _, c := range []struct {
		code int
		err  error
		want string
	}{{503, nil, "503"}, {0, timeout, statusTimeout}, {0, context.DeadlineExceeded, statusTimeout},
		{0, errors.New("connection refused"), statusNetErr}} {
		if got := statusOf(c.code, c.err); got != c.want {
			t.Errorf("statusOf(%d, %v) = %q; want %q", c.code, c.err, got, c.want)
		}
	}
	if !failure("500") || !failure(statusNetErr) || failure("409") || failure("201") {
		t.Error("failure() classifies wrongly")
	}
}

// timeoutErr is a net.Error that timed out.
type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return false }

func TestRetryable(t *testing.T) {
	for code, want := range map[int]bool{0: true, 500: true, 503: true, 409: true, 429: true, 400: false, 422: false, 201: false} {
		if retryable(code) != want {
			t.Errorf("retryable(%d) = %t", code, !want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var l []time.Duration
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{0.5: 50, 0.99: 99, 1: 100, 0.001: 1} {
		if got := percentile(l, p); got != want {
			t.Errorf("p%v = %v; want %v", p, got, want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing")
	}
}

func TestSplitByWindow(t *testing.T) {
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	events := []event{
		{status: "503", start: at(1), end: at(2)},  // before
		{status: "503", start: at(9), end: at(11)}, // straddles the start
		{status: "500", start: at(12), end: at(13)},
		{status: "503", start: at(19), end: at(21)}, // straddles the end
		{status: "503", start: at(22), end: at(23)}, // after
	}
	inside, outside := split(events, at(10), at(20))
	if len(inside) != 3 || len(outside) != 2 {
		t.Errorf("inside %v, outside %v", inside, outside)
	}
	if c := check503Inside(events, at(10), at(20)); c.result != "FAIL" || !strings.Contains(c.detail, "500 x1") {
		t.Errorf("a 500 inside the window: %+v", c)
	}
	if _, outside := split(events, time.Time{}, time.Time{}); len(outside) != len(events) {
		t.Error("without a window every failure is outside")
	}
}

func TestStoredChecks(t *testing.T) {
	posts := []*post{{name: "a", id: 1}, {name: "b", id: 2, replayed: true}, {name: "c"}}
	good := map[string][]int64{"a": {1}, "b": {2}, "c": {3}}
	if c := checkStoredOnce(posts, good, 0); c.result != "PASS" {
		t.Errorf("stored once: %+v", c)
	}
	if c := checkNoDuplicates(posts, good); c.result != "PASS" || !strings.Contains(c.detail, "1 stored but never acknowledged") {
		t.Errorf("no duplicates: %+v", c)
	}
	for name, stored := range map[string]map[string][]int64{
		"missing":   {"b": {2}},
		"other id":  {"a": {7}, "b": {2}},
		"duplicate": {"a": {1, 4}, "b": {2}},
	} {
		if c := checkStoredOnce(posts, stored, 0); c.result != "FAIL" {
			t.Errorf("%s: %+v", name, c)
		}
	}
	for name, stored := range map[string]map[string][]int64{
		"unacknowledged twice": {"a": {1}, "b": {2}, "c": {3, 4}},
		"never sent":           {"a": {1}, "b": {2}, "z": {9}},
	} {
		if c := checkNoDuplicates(posts, stored); c.result != "FAIL" {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

func TestCheckMemory(t *testing.T) {
	t0 := time.Now()
	samples := []rssSample{{t0, 10_000}, {t0.Add(20 * time.Second), 40_000}, {t0.Add(60 * time.Second), 50_000}}
	if c := checkMemory(samples, nil, t0.Add(20*time.Second)); c.result != "PASS" {
		t.Errorf("1.25x: %+v", c)
	}
	samples[2].kib = 70_000
	if c := checkMemory(samples, nil, t0.Add(20*time.Second)); c.result != "FAIL" {
		t.Errorf("1.75x: %+v", c)
	}
	if c := checkMemory(samples, nil, t0.Add(time.Hour)); c.result != "FAIL" {
		t.Errorf("no sample after the warm-up: %+v", c)
	}
}

func TestParseVmRSS(t *testing.T) {
	status := "Name:\tpetstore\nVmPeak:\t  9000 kB\nVmRSS:\t   43512 kB\nThreads:\t9\n"
	if kib, err := parseVmRSS(bufio.NewScanner(strings.NewReader(status))); err != nil || kib != 43512 {
		t.Errorf("got %d, %v", kib, err)
	}
	if _, err := parseVmRSS(bufio.NewScanner(strings.NewReader("Name:\tx\n"))); err == nil {
		t.Error("no VmRSS line accepted")
	}
	if kib, err := readRSS(os.Getpid()); err != nil || kib <= 0 {
		t.Errorf("own RSS: %d, %v", kib, err)
	}
}

func TestAddrWatcher(t *testing.T) {
	w := &addrWatcher{addr: make(chan string, 1)}
	for _, chunk := range []string{"development API key ...\npetstore list", "ening on http://127.0.0.1:4242 (REST", " at /v1/pets)\nmore\n"} {
		_, _ = w.Write([]byte(chunk))
	}
	select {
	case a := <-w.addr:
		if a != "http://127.0.0.1:4242" {
			t.Errorf("address %q", a)
		}
	default:
		t.Error("no address")
	}
}

func TestSummarizeLog(t *testing.T) {
	path := t.TempDir() + "/petstore.log"
	log := `petstore listening on http://127.0.0.1:1 (REST at /v1/pets, GraphQL at /v1/graphql)
{"level":"INFO","msg":"request","status":200}
{"level":"ERROR","msg":"request failed","err":"dial tcp: connection refused"}
{"level":"WARN","msg":"idempotency: releasing a key failed","err":"invalid connection"}
{"level":"ERROR","msg":"request failed","err":"another"}
`
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	groups, err := summarizeLog(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []logGroup{{"ERROR", "request failed", "another", 1}, {"ERROR", "request failed", "dial tcp: connection refused", 1},
		{"WARN", "idempotency: releasing a key failed", "invalid connection", 1}}
	if !slices.Equal(groups, want) {
		t.Errorf("got %+v; want %+v", groups, want)
	}
}
