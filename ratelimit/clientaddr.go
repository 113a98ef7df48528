package ratelimit

import (
	"net/http"
	"net/netip"
	"strings"
)

// proxies is the parsed Config.TrustedProxies.
type proxies []netip.Prefix

// trusts reports whether a is one of the trusted proxies.
func (ps proxies) trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr returns the client address of r as the package doc describes: the immediate
// peer, or, when the peer is a trusted proxy, the first untrusted hop of X-Forwarded-For read
// from right to left. It returns the zero Addr when RemoteAddr cannot be parsed.
func (ps proxies) clientAddr(r *http.Request) netip.Addr {
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

// walk reads one X-Forwarded-For line from right to left, starting from the trusted hop last.
// It returns the client and true when it finds an untrusted hop or a malformed entry (the
// client is then the last valid hop), or the leftmost hop and false when all are trusted.
func (ps proxies) walk(last netip.Addr, line string) (netip.Addr, bool) {
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
