package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/config"
	"petstore/internal/dbtest"
)

// TestStreamEndsWithItsClient: a stream served on a connection of its own ends as soon as its
// client closes the connection, freeing its slot.
func TestStreamEndsWithItsClient(t *testing.T) {
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, config.Default(), "business")
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
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, config.Default(), "business")
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
	time.Sleep(100 * time.Millisecond)
	id := s.createPet(t, s.key, "Rex", "")
	if e := recvEvent(t, events); !strings.Contains(e, fmt.Sprintf(`"id":"%d"`, id)) {
		t.Fatalf("event %q; want pet %d", e, id)
	}
}
