package wire

import (
	"context"
	"strings"
	"testing"

	"petstore/apierr"
	"petstore/auth"
	"petstore/live"
	"petstore/live/conns"
)

// TestEndEvent: what ends an SSE stream before complete: nothing for one that simply ends; an
// error event then complete for one ended with an error or cut off for good (a revoked key:
// UNAUTHORIZED); a comment and no complete for one cut off with a Retryable code, which its
// client resumes.
func TestEndEvent(t *testing.T) {
	reg := conns.NewRegistry(live.NewHub(live.HubOptions{}), conns.RegistryOptions{})
	t.Cleanup(reg.Shutdown)
	open := func(id int64) *conns.Conn {
		c, err := reg.Open(context.Background(), &auth.Principal{KeyID: id, Plan: auth.Pro}, func(int, string) {}, true)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, c := range []struct {
		name     string
		end      func(*conns.Conn)
		want     string
		complete bool
	}{
		{"ended", func(*conns.Conn) {}, "", true},
		{"with an error", func(c *conns.Conn) { c.EndWith(apierr.New(apierr.RateLimited, "too fast")) }, `"code":"RATE_LIMITED"`, true},
		{"revoked", func(c *conns.Conn) { c.Cut(live.CloseForbidden, "the API key was revoked") }, `"code":"UNAUTHORIZED"`, true},
		{"too slow", func(c *conns.Conn) { c.Cut(live.CloseSlow, live.ReasonSlow) }, `"code":"UNAVAILABLE"`, true},
		{"shutdown", func(c *conns.Conn) { c.Cut(live.CloseGoingAway, "the instance\nis shutting down") }, ": the instance is shutting down\n\n", false},
		{"retry", func(c *conns.Conn) { c.Cut(live.CloseRetry, "retry") }, ": retry\n\n", false},
	} {
		conn := open(int64(len(c.name)))
		c.end(conn)
		ev, complete := endEvent(conn)
		if complete != c.complete || !strings.Contains(string(ev), c.want) || (c.want == "") != (ev == nil) {
			t.Errorf("%s: %q, complete %v; want %q, complete %v", c.name, ev, complete, c.want, c.complete)
		}
		if c.want != "" && c.complete && !strings.HasPrefix(string(ev), "event: next\ndata: ") {
			t.Errorf("%s: %q; want an event of the stream", c.name, ev)
		}
		reg.Close(conn)
	}
}
