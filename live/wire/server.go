package wire

import (
	"sync"
	"time"

	"petstore/live/conns"
)

// Server carries the subscriptions of a conns.Registry over the wire: WebSockets (Upgrade and
// Websocket) and SSE streams (Stream). It knows the sockets it serves, to ping them every
// conns.RegistryOptions.PingEvery from the first one until the Registry shuts down.
type Server struct {
	reg          *conns.Registry
	writeTimeout time.Duration // conns.RegistryOptions.WriteTimeout

	pingOnce sync.Once
	mu       sync.Mutex
	ws       map[*wsConn]struct{}
}

// New returns the Server of reg's connections.
func New(reg *conns.Registry) *Server {
	return &Server{reg: reg, writeTimeout: reg.Options().WriteTimeout, ws: map[*wsConn]struct{}{}}
}

// trackWS counts ws among the sockets pingAll pings until untrackWS; the first starts the
// pings.
func (r *Server) trackWS(ws *wsConn) {
	r.pingOnce.Do(func() { go r.pingEvery(r.reg.Context(), r.reg.Options().PingEvery) })
	r.mu.Lock()
	r.ws[ws] = struct{}{}
	r.mu.Unlock()
}

// untrackWS no longer counts ws among the sockets pingAll pings.
func (r *Server) untrackWS(ws *wsConn) {
	r.mu.Lock()
	delete(r.ws, ws)
	r.mu.Unlock()
}

// releasePending gives back the pending slot of st's socket, once.
func (r *Server) releasePending(st *wsState) {
	r.mu.Lock()
	addr := st.addr
	st.addr = ""
	r.mu.Unlock()
	if addr != "" {
		r.reg.ReleasePending(addr)
	}
}
