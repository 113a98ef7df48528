package wire

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// keepAliveMessage is graphql-ws's keep-alive (legacyProtocol). Its clients answer nothing to
// it, so they also get a WebSocket ping, which their WebSocket answers.
var keepAliveMessage = json.RawMessage(`{"type":"ka"}`)

// pingMessage is graphql-transport-ws's ping (transportProtocol): its clients answer pong.
var pingMessage = json.RawMessage(`{"type":"ping"}`)

// pingEvery runs pingAll every d until ctx ends.
func (r *Server) pingEvery(ctx context.Context, d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.pingAll()
		}
	}
}

// pingAll pings every authenticated WebSocket that is not busy, in its protocol's way, and
// closes those whose peer answered none of the last three pings: counted by socket, so that a
// round that takes long (sockets whose writes block) makes no other peer look dead. At most
// 16 sockets are pinged at once.
func (r *Server) pingAll() {
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, ws := range r.authenticated() {
		if ws.missed.Load() >= 3 {
			_ = ws.net.Close() // the read loop ends, and with it the connection
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r.ping(ws)
		}()
	}
	wg.Wait()
}

// authenticated returns the WebSockets past connection_init.
func (r *Server) authenticated() []*wsConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	conns := make([]*wsConn, 0, len(r.ws))
	for ws := range r.ws {
		if ws.conn.Load() != nil {
			conns = append(conns, ws)
		}
	}
	return conns
}

// ping pings ws unless it is busy, counting the ping as missed until the peer sends something:
// a graphql-transport-ws socket with its protocol's ping, whose pong counts as the peer's
// message; any other with pingLegacy.
func (r *Server) ping(ws *wsConn) {
	if ws.busy() {
		return
	}
	ws.missed.Add(1)
	if ws.Subprotocol() == transportProtocol {
		_ = ws.WriteJSON(pingMessage)
	} else { // legacyProtocol, or none
		r.pingLegacy(ws)
	}
}

// pingLegacy pings ws, a socket of legacyProtocol: a pong within WriteTimeout counts as the
// peer's message. The pong is waited for on a goroutine of its own, one per socket at most:
// a peer that answers none would otherwise hold one of pingAll's goroutines for WriteTimeout
// each round.
func (r *Server) pingLegacy(ws *wsConn) {
	if ws.WriteJSON(keepAliveMessage) != nil || !ws.ponging.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer ws.ponging.Store(false)
		ctx, cancel := context.WithTimeout(r.reg.Context(), r.writeTimeout)
		defer cancel()
		if ws.ws.Ping(ctx) == nil {
			ws.missed.Store(0)
		}
	}()
}
