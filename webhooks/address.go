package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"petstore/apierr"
)

// Resolver looks up the addresses of a host name: *net.Resolver, or a test's own, which
// answers private and metadata addresses for test names without any DNS traffic.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Addresses decides which receiver addresses deliveries may reach: by default only public
// ones over https; with AllowPrivate (PETSTORE_WEBHOOK_ALLOW_PRIVATE, for development and
// tests) any address, over http too.
type Addresses struct {
	Resolver     Resolver // nil: net.DefaultResolver
	AllowPrivate bool
}

// maxURLLength bounds an endpoint's url, as its column does.
const maxURLLength = 2048

// errRefused is the cause of every refused address, for the delivery's last error.
var errRefused = errors.New("the address is loopback, private, link-local or otherwise not public")

// notPublic are the IPv4 and IPv6 ranges beyond netip's own tests (loopback, private,
// link-local, multicast, unspecified) that no public receiver has: "this network", shared
// address space (carrier-grade NAT and some clouds' metadata), IETF protocol assignments,
// benchmarking, reserved, NAT64 (which may lead to any IPv4 address) and documentation.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("100::/64"),
}

// Public reports whether ip is a public unicast address a delivery may reach by default.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// allowed reports whether a delivery may reach ip.
func (a Addresses) allowed(ip netip.Addr) bool { return a.AllowPrivate || Public(ip) }

// resolver returns a's resolver.
func (a Addresses) resolver() Resolver {
	if a.Resolver == nil {
		return net.DefaultResolver
	}
	return a.Resolver
}

// Check parses raw, an endpoint's url, and checks that deliveries may go to it: an absolute
// https URL (http too with AllowPrivate) without credentials or fragment, whose host resolves,
// within a few seconds, to addresses that are all allowed. Its errors are INVALID_REQUEST.
func (a Addresses) Check(ctx context.Context, raw string) (*url.URL, error) {
	if raw == "" {
		return nil, apierr.Invalid("url is required: an absolute https URL of your receiver")
	}
	u, err := url.Parse(raw)
	if err != nil || len(raw) > maxURLLength || u.Host == "" || u.Opaque != "" {
		return nil, apierr.Invalid("url must be an absolute https URL of at most %d characters", maxURLLength)
	}
	if u.Scheme != "https" && !(a.AllowPrivate && u.Scheme == "http") {
		return nil, apierr.Invalid("url must use https; got %q", u.Scheme)
	}
	if u.User != nil || u.Fragment != "" {
		return nil, apierr.Invalid("url must not carry credentials or a fragment")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := a.lookup(ctx, u.Hostname())
	if err != nil {
		return nil, apierr.Invalid("url's host %s does not resolve", u.Hostname())
	}
	for _, ip := range ips {
		if !a.allowed(ip) {
			return nil, apierr.Invalid("url's host %s resolves to %s, which is loopback, private, link-local or otherwise not public", u.Hostname(), ip)
		}
	}
	return u, nil
}

// lookup returns the addresses of host: itself when it is an IP address.
func (a Addresses) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	ips, err := a.resolver().LookupNetIP(ctx, "ip", host)
	if err == nil && len(ips) == 0 {
		err = fmt.Errorf("no address for %s", host)
	}
	return ips, err
}

// DialContext dials addr (host:port) for a delivery: it resolves the host itself and dials
// each of its addresses in turn, each checked by the dialer's Control hook just before the
// socket connects, so that a name that resolved to a public address at registration and
// resolves to a private one at delivery (DNS rebinding) is refused, never connected to.
func (a Addresses) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := a.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 10 * time.Second, Control: a.control}
	for _, ip := range ips {
		var c net.Conn
		if c, err = d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port)); err == nil {
			return c, nil
		}
	}
	return nil, err
}

// control refuses, before the socket connects, an address a delivery may not reach.
func (a Addresses) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !a.allowed(ap.Addr()) {
		return errRefused
	}
	return nil
}
