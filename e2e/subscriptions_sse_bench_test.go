package e2e

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
)

// The cost of an idle SSE stream, as subscriptions_bench_test.go measures an idle WebSocket
// subscription. Run:
//
//	go test -run '^$' -bench 'IdleStreams' -benchtime 1x .
//
// TestIdleStreamCost is the small variant CI runs.

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

// BenchmarkIdleStreams reports the server's memory and goroutines per idle SSE stream (goal:
// at most 32 KiB and 3, as for a WebSocket subscription).
func BenchmarkIdleStreams(b *testing.B) { benchmarkIdle(b, "sse", "stream") }

// TestIdleStreamCost is BenchmarkIdleStreams at 200 streams, held to the same goals with the
// margin TestIdleSubscriptionCost allows.
func TestIdleStreamCost(t *testing.T) { checkIdleCost(t, "sse", "stream") }
