package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"petstore/apierr"
)

func TestClientAddr(t *testing.T) {
	tests := []struct {
		name    string
		trusted []string
		remote  string
		xff     []string
		want    string // "" for the zero Addr
	}{
		{"peer without proxies", nil, "203.0.113.9:5555", nil, "203.0.113.9"},
		{"header ignored without proxies", nil, "203.0.113.9:5555", []string{"198.51.100.7"}, "203.0.113.9"},
		{"header ignored from untrusted peer", []string{"10.0.0.0/8"}, "203.0.113.9:5555", []string{"198.51.100.7"}, "203.0.113.9"},
		{"trusted peer", []string{"10.0.0.0/8"}, "10.0.0.1:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"trusted single address", []string{"10.0.0.1"}, "10.0.0.1:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"spoofed entries left of the client", []string{"10.0.0.0/8"}, "10.0.0.1:80",
			[]string{"1.1.1.1, 2.2.2.2, 198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
		{"several header lines", []string{"10.0.0.0/8"}, "10.0.0.1:80",
			[]string{"1.1.1.1, 198.51.100.7", "10.0.0.3"}, "198.51.100.7"},
		{"every hop trusted", []string{"10.0.0.0/8"}, "10.0.0.1:80", []string{"10.0.0.5, 10.0.0.2"}, "10.0.0.5"},
		{"malformed entry stops at last valid hop", []string{"10.0.0.0/8"}, "10.0.0.1:80",
			[]string{"198.51.100.7, garbage, 10.0.0.3"}, "10.0.0.3"},
		{"no header from trusted peer", []string{"10.0.0.0/8"}, "10.0.0.1:80", nil, "10.0.0.1"},
		{"entries with ports", []string{"10.0.0.0/8"}, "10.0.0.1:80", []string{"198.51.100.7:1234"}, "198.51.100.7"},
		{"ipv6 entries", []string{"2001:db8:ffff::/48"}, "[2001:db8:ffff::1]:443",
			[]string{"2001:db8:1::7, [2001:db8:ffff::2]"}, "2001:db8:1::7"},
		{"ipv4-mapped peer", []string{"10.0.0.0/8"}, "[::ffff:10.0.0.1]:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"ipv4-mapped proxy setting", []string{"::ffff:10.0.0.0/104"}, "10.0.0.1:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"unparsable remote address", nil, "@", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := parseProxies(tt.trusted)
			if err != nil {
				t.Fatalf("parseProxies: %v", err)
			}
			r := httptest.NewRequest(http.MethodGet, "/v1/pets", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got := proxies(ps).clientAddr(r)
			if want := parseOrZero(tt.want); got != want {
				t.Errorf("got %v; want %v", got, want)
			}
		})
	}
}

func parseOrZero(s string) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	return netip.MustParseAddr(s)
}

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

// TestForwardedForThroughRouter: behind a trusted proxy each forwarded client has its own
// budget; from an untrusted peer the header changes nothing.
func TestForwardedForThroughRouter(t *testing.T) {
	cfg := testConfig()
	cfg.TrustedProxies = []string{"10.0.0.0/8"}
	h := newRouter(t, newLimiter(t, cfg, NewMemoryStore(newFakeClock().Now)), nil)
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
