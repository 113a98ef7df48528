package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/auth"
	"petstore/config"
	"petstore/internal/dbtest"
)

// The cost of an idle SSE stream, as subscriptions_bench_test.go measures an idle WebSocket
// subscription. Run:
//
//	go test -run '^$' -bench 'IdleStreams' -benchtime 1x .
//
// TestIdleStreamCost is the small variant CI runs.

// idleStreamsEnv names, in the helper process, the server and keys its clients use.
const idleStreamsEnv = "PETSTORE_TEST_IDLE_STREAMS"

// TestIdleStreamsHelper is not a test: in the process BenchmarkIdleStreams starts, it opens
// the streams (raw TCP, no goroutine each), says "ready" and holds them until its stdin closes,
// so that the server's process counts no client memory.
func TestIdleStreamsHelper(t *testing.T) {
	spec := os.Getenv(idleStreamsEnv)
	if spec == "" {
		t.Skip("the helper process of BenchmarkIdleStreams")
	}
	parts := strings.Split(spec, ",") // addr, n, keys...
	n, _ := strconv.Atoi(parts[1])
	keys := parts[2:]
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c, err := rawStream(parts[0], keys[i%len(keys)])
		if err != nil {
			fmt.Println("error:", i, err)
			os.Exit(1)
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		_ = c.Close()
	}
}

// streamQuery is the body of a petAdded stream.
const streamQuery = `{"query":"subscription { petAdded { cursor pet { id name } } }"}`

// rawStream opens a petAdded stream (POST /v1/graphql, Accept: text/event-stream) at addr with
// key, reads the answer's head and the stream's first comment, and reads nothing afterwards.
func rawStream(addr, key string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "POST /v1/graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		addr, key, len(streamQuery), streamQuery)
	br := bufio.NewReaderSize(c, 512)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		c.Close()
		return nil, fmt.Errorf("stream: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, err
		}
		if line == "\r\n" {
			break
		}
	}
	// The stream's first bytes: a chunk holding the comment ":\n\n" (chunked encoding).
	if first, err := br.ReadString(':'); err != nil || !strings.HasSuffix(first, ":") {
		c.Close()
		return nil, fmt.Errorf("stream's first event: %q %v", first, err)
	}
	return c, nil
}

// idleStreamCost opens n idle streams from a helper process and returns the server's heap and
// stack bytes and goroutines per stream.
func idleStreamCost(tb testing.TB, n int) (bytesPer, goroutinesPer float64) {
	tb.Helper()
	db := dbtest.New(tb, "sqlite")
	s := newLiveServer(tb, db, nil, config.Default(), "business")
	var keys []string
	for range (n + 999) / 1000 { // an enterprise key holds up to 1,000
		k, _, err := auth.CreateKey(context.Background(), db.DB, s.cfg.KeyPrefix(),
			auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
		if err != nil {
			tb.Fatal(err)
		}
		keys = append(keys, k)
	}
	s.createPet(tb, s.key, "warm", "") // the Hub, the pools and the caches exist before
	warm, err := rawStream(strings.TrimPrefix(s.url, "http://"), keys[0])
	if err != nil {
		tb.Fatal(err)
	}
	_ = warm.Close() // the first stream's one-time costs (the GraphQL document cached) are not counted
	before, gBefore := settledCost(tb)
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleStreamsHelper$")
	cmd.Env = append(os.Environ(), idleStreamsEnv+"="+strings.TrimPrefix(s.url, "http://")+","+strconv.Itoa(n)+","+strings.Join(keys, ","))
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		tb.Fatalf("helper: %q %v", line, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for activeSubscriptions(tb, s.url) < n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d subscriptions active; want %d", activeSubscriptions(tb, s.url), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	after, gAfter := serverCost()
	return (float64(after) - float64(before)) / float64(n), float64(gAfter-gBefore) / float64(n)
}

// settledCost returns serverCost once the process's goroutines have stopped coming and going
// for half a second (the warm-up stream's, and earlier tests' winding down), at most 10 s.
func settledCost(tb testing.TB) (uint64, int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	bytes, g := serverCost()
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		b2, g2 := serverCost()
		if g2 == g {
			return b2, g2
		}
		bytes, g = b2, g2
	}
	return bytes, g
}

// BenchmarkIdleStreams reports the server's memory and goroutines per idle SSE stream (goal:
// at most 32 KiB and 3, as for a WebSocket subscription).
func BenchmarkIdleStreams(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				per, g := idleStreamCost(b, n)
				b.ReportMetric(per, "B/stream")
				b.ReportMetric(g, "goroutines/stream")
			}
		})
	}
}

// TestIdleStreamCost is BenchmarkIdleStreams at 200 streams, held to the same goals with the
// margin TestIdleSubscriptionCost allows.
func TestIdleStreamCost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a helper process")
	}
	per, g := idleStreamCost(t, 200)
	t.Logf("%.0f B and %.2f goroutines per idle stream", per, g)
	if per > 32<<10 || g > 3.05 {
		t.Fatalf("%.0f B and %.2f goroutines per idle stream; want at most 32 KiB and 3", per, g)
	}
}
