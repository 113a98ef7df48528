package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/app"
	"petstore/testkit/dbtest"
)

// TestStreamEndsWithItsClient: a stream served on a connection of its own ends as soon as its
// client closes the connection, freeing its slot.
func TestStreamEndsWithItsClient(t *testing.T) {
	t.Parallel()
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, app.DefaultConfig(), "business")
	key := s.newKey(t, "free")
	_, _, _, first := s.sseOpen(t, key)
	if status, body, _, _ := s.sseOpen(t, key); status != http.StatusOK {
		t.Fatalf("second stream: %d %s", status, body)
	}
	s.sseOverCap(t, key)
	first()
	within(t, freedSoon, "the slot of a closed stream is free", func() bool {
		status, _, _, cancel := s.sseOpen(t, key)
		if status != http.StatusOK {
			cancel()
		}
		return status == http.StatusOK
	})
	time.Sleep(200 * time.Millisecond) // the third joins the Hub
	if n := activeSubscriptions(t, s.url); n != 2 {
		t.Fatalf("%d subscriptions active; want 2", n)
	}
}

// TestStreamOverHTTP10: an HTTP/1.0 client, which knows no chunked bodies, gets its stream in
// the request, ended by the connection's close.
func TestStreamOverHTTP10(t *testing.T) {
	t.Parallel()
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, app.DefaultConfig(), "business")
	addr := strings.TrimPrefix(s.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/graphql HTTP/1.0\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		addr, s.key, len(streamQuery), streamQuery)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) != 0 || resp.Header.Get("X-RateLimit-Limit") == "" {
		t.Fatalf("HTTP/1.0 stream: %d %v %v; want 200, not chunked, with the rate-limit headers", resp.StatusCode, resp.TransferEncoding, resp.Header)
	}
	events := sseEvents(resp.Body)
	s.waitActive(t, 1)
	id := s.createPet(t, s.key, "Rex", "")
	if e := recvEvent(t, events); !strings.Contains(e, fmt.Sprintf(`"id":"%d"`, id)) {
		t.Fatalf("event %q; want pet %d", e, id)
	}
}

// TestStreamEndsAtClientInput: an SSE client has nothing to send after its request. One that
// sends bytes anyway, pipelined after the request (net/http has them buffered when the
// connection is taken over) or once the stream runs, sees its stream end at once with an
// INVALID_REQUEST error event before complete, and the stream's slot is free again.
func TestStreamEndsAtClientInput(t *testing.T) {
	t.Parallel()
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, app.DefaultConfig(), "business")
	for _, pipelined := range []bool{true, false} {
		t.Run(map[bool]string{true: "pipelined", false: "after"}[pipelined], func(t *testing.T) {
			key := s.newKey(t, "free")
			if status, body, _, _ := s.sseOpen(t, key); status != http.StatusOK { // holds one of the 2 slots
				t.Fatalf("first stream: %d %s", status, body)
			}
			addr := strings.TrimPrefix(s.url, "http://")
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			junk := strings.Repeat("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 4)
			req := fmt.Sprintf("POST /v1/graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
				addr, key, len(streamQuery), streamQuery)
			if pipelined {
				req += junk
			}
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("stream: %d; want 200", resp.StatusCode)
			}
			br := bufio.NewReader(resp.Body)
			if !pipelined {
				if line, err := br.ReadString('\n'); err != nil || line != ":\n" { // the stream's opening comment
					t.Fatalf("stream start: %q %v", line, err)
				}
				if _, err := io.WriteString(c, junk); err != nil {
					t.Fatal(err)
				}
			}
			sent := time.Now()
			var got []string
			for e := range sseEvents(br) {
				got = append(got, e)
			}
			took := time.Since(sent)
			t.Logf("the stream ended %v after the client's bytes: %q", took.Round(time.Millisecond), got)
			if took > 2*time.Second || len(got) != 2 || !strings.HasPrefix(got[0], "next ") ||
				!strings.Contains(got[0], "INVALID_REQUEST") || got[1] != "complete " {
				t.Fatalf("after %v: events %q; want the stream ended at once with an INVALID_REQUEST error, then complete", took, got)
			}
			within(t, freedSoon, "the slot of the stream ended is free", func() bool {
				status, _, _, cancel := s.sseOpen(t, key)
				cancel()
				return status == http.StatusOK
			})
		})
	}
}
