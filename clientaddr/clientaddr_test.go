package clientaddr

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
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
			ps, err := ParseProxies(tt.trusted)
			if err != nil {
				t.Fatalf("ParseProxies: %v", err)
			}
			r := httptest.NewRequest(http.MethodGet, "/v1/pets", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got := ps.Of(r)
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

func TestParseProxies(t *testing.T) {
	if _, err := ParseProxies([]string{"10.0.0.0/8", " 192.168.1.1 ", "2001:db8::/32"}); err != nil {
		t.Errorf("valid list: got %v; want no error", err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", ""} {
		if _, err := ParseProxies([]string{bad}); err == nil || !strings.Contains(err.Error(), "trusted proxies") {
			t.Errorf("%q: got %v; want an error naming the trusted proxies", bad, err)
		}
	}
}

// TestMiddleware: the address worked out once is what From returns to every later reader;
// without the middleware From gives the immediate peer.
func TestMiddleware(t *testing.T) {
	ps, err := ParseProxies([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	var got []netip.Addr
	r := gin.New()
	r.Use(ps.Middleware)
	r.GET("/", func(c *gin.Context) { got = append(got, From(c.Request)) })
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr, req.Header["X-Forwarded-For"] = "10.0.0.1:80", []string{"198.51.100.7"}
	r.ServeHTTP(httptest.NewRecorder(), req)
	if want := netip.MustParseAddr("198.51.100.7"); len(got) != 1 || got[0] != want {
		t.Errorf("through the middleware: got %v; want [%v]", got, want)
	}
	if a, want := From(req), netip.MustParseAddr("10.0.0.1"); a != want {
		t.Errorf("without the middleware: got %v; want the peer %v", a, want)
	}
}
