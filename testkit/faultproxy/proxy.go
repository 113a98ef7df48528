// Package faultproxy is a loopback TCP proxy for fault tests: a test points a client at it,
// then cuts and restores the connection to the real server, which keeps running for the
// other tests.
package faultproxy

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// Proxy forwards connections to an upstream server. Cut closes every connection and closes
// new ones as soon as they are accepted; Restore forwards again. DropOn drops one connection
// at a chosen point of its conversation.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	drop  *dropRule
}

// When says at which point DropOn drops a connection.
type When int

// The points of DropOn.
const (
	// BeforeSend drops the connection instead of forwarding the client's bytes: the server
	// never sees them.
	BeforeSend When = iota
	// BeforeReply forwards the client's bytes, then drops the connection when the server's
	// first answer to them arrives, unsent: the server acted, the client never learns how.
	BeforeReply
)

type dropRule struct {
	pattern []byte
	when    When
	done    chan struct{}
}

// DropOn arms the proxy to drop, once, the first connection whose client sends bytes
// containing pattern (a chunk as read from the socket: a MySQL statement's text, say), at
// point when. The returned channel is closed once it dropped one.
func (p *Proxy) DropOn(pattern string, when When) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop = &dropRule{pattern: []byte(pattern), when: when, done: make(chan struct{})}
	return p.drop.done
}

// matchDrop returns the armed rule if chunk matches it, disarming it.
func (p *Proxy) matchDrop(chunk []byte) *dropRule {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drop == nil || !bytes.Contains(chunk, p.drop.pattern) {
		return nil
	}
	r := p.drop
	p.drop = nil
	return r
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
	replyDrop := make(chan *dropRule, 1)
	go func() {
		p.clientToServer(down, up, replyDrop)
		_ = up.Close()
	}()
	p.serverToClient(up, down, replyDrop)
	_ = down.Close()
}

// clientToServer copies down to up, dropping both at a matching chunk as the armed rule says.
func (p *Proxy) clientToServer(down, up net.Conn, replyDrop chan<- *dropRule) {
	buf := make([]byte, 64<<10)
	for {
		n, err := down.Read(buf)
		if n > 0 {
			r := p.matchDrop(buf[:n])
			if r != nil && r.when == BeforeSend {
				_ = down.Close()
				close(r.done)
				return
			}
			if r != nil {
				replyDrop <- r
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// serverToClient copies up to down; after a chunk armed BeforeReply was forwarded, it drops
// the connection at the server's next bytes instead of passing them on.
func (p *Proxy) serverToClient(up, down net.Conn, replyDrop <-chan *dropRule) {
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			select {
			case r := <-replyDrop:
				_ = up.Close()
				close(r.done)
				return
			default:
			}
			if _, werr := down.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
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
