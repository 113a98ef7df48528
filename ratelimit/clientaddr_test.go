package ratelimit

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/clientaddr"
)

func TestAddrSubject(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"203.0.113.9", "a:203.0.113.9"},
		{"::ffff:203.0.113.9", "a:203.0.113.9"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "a:2001:db8:1:2::"},
		{"fe80::1%eth0", "a:fe80::"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := AddrSubject(netip.MustParseAddr(tt.addr)).String(); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}
	if got := AddrSubject(netip.Addr{}).String(); got != "a:unknown" {
		t.Errorf("zero Addr: got %q; want %q", got, "a:unknown")
	}
}

// TestForwardedForThroughRouter: the limiter charges the address clientaddr worked out: behind a trusted proxy each forwarded client has its own
// budget; from an untrusted peer the header changes nothing.
func TestForwardedForThroughRouter(t *testing.T) {
	ps, err := clientaddr.ParseProxies([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	lim := newLimiter(t, testConfig(), NewMemoryCounters(newFakeClock().Now))
	h := gin.New()
	h.Use(ps.Middleware, identify(nil), lim.Middleware, require)
	h.GET("/v1/pets", func(c *gin.Context) { c.String(http.StatusOK, "[]") })
	for range 3 {
		check(t, serve(h, req{addr: "10.0.0.1:80", xff: "198.51.100.7"}), http.StatusUnauthorized, "", nil)
	}
	check(t, serve(h, req{addr: "10.0.0.1:80", xff: "198.51.100.7"}), http.StatusTooManyRequests, apierr.RateLimited, nil)
	check(t, serve(h, req{addr: "10.0.0.1:80", xff: "198.51.100.8"}), http.StatusUnauthorized, "",
		map[string]string{"X-RateLimit-Remaining": "2"})
	for i, want := range []int{http.StatusUnauthorized, http.StatusUnauthorized, http.StatusUnauthorized, http.StatusTooManyRequests} {
		xff := []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}[i] // rotating the header does not help
		if got := serve(h, req{addr: "203.0.113.9:5555", xff: xff}).Code; got != want {
			t.Errorf("untrusted peer, request %d: got %d; want %d", i+1, got, want)
		}
	}
}
