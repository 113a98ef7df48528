package live

import "sync"

// pingAll pings every authenticated WebSocket that is not busy, in its protocol's way, and
// closes those whose peer answered none of the last three pings: counted by socket, so that a
// round that takes long (sockets whose writes block) makes no other peer look dead. At most
// 16 sockets are pinged at once.
func (r *Registry) pingAll() {
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
func (r *Registry) authenticated() []*wsConn {
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

// ping pings ws unless it is busy, counting the ping as missed until the peer sends something.
func (r *Registry) ping(ws *wsConn) {
	if ws.busy() {
		return
	}
	ws.missed.Add(1)
	if ws.Subprotocol() == transportProtocol {
		ws.pingTransport()
	} else { // legacyProtocol, or none
		r.pingLegacy(ws)
	}
}
