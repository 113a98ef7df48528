// Package clientaddr works out, once per request, the address of the client a request comes
// from, so that the rate limiter, the request log and anything else read the same answer.
//
// The client address is the immediate peer (http.Request.RemoteAddr). Only when that peer is
// one of the trusted proxies is X-Forwarded-For consulted: its entries are read from right to
// left, skipping trusted proxies, and the first untrusted address is the client (if every entry
// is a trusted proxy, the leftmost one). A malformed entry stops the walk at the last valid
// hop. An unparsable RemoteAddr gives the zero netip.Addr. Gin's own ClientIP (and its
// trusted-proxy settings) is not used.
package clientaddr

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/gin-gonic/gin"
)

// Proxies are the trusted proxies: the peers whose X-Forwarded-For header is believed. The
// zero value trusts none, so the client is always the immediate peer.
type Proxies struct {
	trusted []netip.Prefix
}

// ParseProxies parses a list of CIDR prefixes ("10.0.0.0/8") or single addresses
// ("192.168.1.1"), IPv4-mapped IPv6 forms counting as IPv4.
func ParseProxies(list []string) (Proxies, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		s = strings.TrimSpace(s)
		if a, err := netip.ParseAddr(s); err == nil {
			a = a.Unmap().WithZone("")
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Proxies{}, fmt.Errorf("trusted proxies: %q is neither an address nor a CIDR prefix", s)
		}
		out = append(out, netip.PrefixFrom(p.Addr().Unmap(), unmappedBits(p)).Masked())
	}
	return Proxies{trusted: out}, nil
}

// unmappedBits returns the prefix length of p once an IPv4-mapped address is unmapped.
func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return max(0, p.Bits()-96)
	}
	return p.Bits()
}

type ctxKey struct{}

// addrContext is a context carrying the client address: one allocation, where
// context.WithValue would take two (its context and the address put in an interface).
type addrContext struct {
	context.Context
	addr netip.Addr
}

// Value returns the addrContext itself for ctxKey, and the parent's value for any other key.
func (c *addrContext) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// Middleware is the gin.HandlerFunc that works out the client address of the request (Of)
// and keeps it in the request's context for From. Install it first.
func (ps Proxies) Middleware(c *gin.Context) {
	c.Request = c.Request.WithContext(&addrContext{Context: c.Request.Context(), addr: ps.Of(c.Request)})
}

// From returns the client address Middleware worked out for r, or, when it did not run, the
// immediate peer (no proxy trusted).
func From(r *http.Request) netip.Addr {
	if c, ok := r.Context().Value(ctxKey{}).(*addrContext); ok {
		return c.addr
	}
	return parseHost(r.RemoteAddr)
}

// FromContext returns the client address Middleware kept in ctx (a request's context, or one
// derived from it), and false when it did not run.
func FromContext(ctx context.Context) (netip.Addr, bool) {
	if c, ok := ctx.Value(ctxKey{}).(*addrContext); ok {
		return c.addr, true
	}
	return netip.Addr{}, false
}

// Of returns the client address of r as the package doc describes.
func (ps Proxies) Of(r *http.Request) netip.Addr {
	peer := parseHost(r.RemoteAddr)
	if !peer.IsValid() || !ps.trusts(peer) {
		return peer
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		var done bool
		if peer, done = ps.walk(peer, hops[i]); done {
			return peer
		}
	}
	return peer
}

// trusts reports whether a is one of the trusted proxies.
func (ps Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range ps.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// walk reads one X-Forwarded-For line from right to left, starting from the trusted hop last.
// It returns the client and true when it finds an untrusted hop or a malformed entry (the
// client is then the last valid hop), or the leftmost hop and false when all are trusted.
func (ps Proxies) walk(last netip.Addr, line string) (netip.Addr, bool) {
	for line != "" {
		entry := line
		if i := strings.LastIndexByte(line, ','); i >= 0 {
			entry, line = line[i+1:], line[:i]
		} else {
			line = ""
		}
		a := parseHost(strings.TrimSpace(entry))
		if !a.IsValid() {
			return last, true
		}
		if !ps.trusts(a) {
			return a, true
		}
		last = a
	}
	return last, false
}

// parseHost parses "ip", "ip:port" or "[ipv6]:port"; it returns the zero Addr on failure.
func parseHost(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		a, _ := netip.ParseAddr(s[1 : len(s)-1])
		return a
	}
	return netip.Addr{}
}
