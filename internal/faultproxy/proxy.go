// Package faultproxy is a loopback TCP proxy for fault tests: a test points a client at it,
// then cuts and restores the connection to the real server, which keeps running for the
// other tests.
package faultproxy

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards connections to an upstream server. Cut closes every connection and closes
// new ones as soon as they are accepted; Restore forwards again.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// Start returns a proxy to upstream (host:port) listening on a free loopback port, closed
// when tb ends.
func Start(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("faultproxy: %v", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	go p.serve()
	tb.Cleanup(func() {
		_ = ln.Close()
		p.Cut()
	})
	return p
}

// Addr returns the proxy's address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Restore forwards new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *Proxy) forward(down net.Conn) {
	up, err := net.Dial("tcp", p.upstream)
	if err != nil || !p.track(down, up) {
		_ = down.Close()
		if up != nil {
			_ = up.Close()
		}
		return
	}
	go func() {
		_, _ = io.Copy(up, down)
		_ = up.Close()
	}()
	_, _ = io.Copy(down, up)
	_ = down.Close()
}

// track registers the connections unless the proxy is cut.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}
