package live

import (
	"context"
	"encoding/json"
)

// legacyProtocol is the older protocol gqlgen's transport also speaks (subscriptions-transport-ws),
// and serves a socket that names no subprotocol as. Its clients answer nothing to the server's
// keep-alive (keepAliveMessage), so they also get a WebSocket ping, which their WebSocket
// answers.
const legacyProtocol = "graphql-ws"

// legacyMessages are the types of message a graphql-ws client may send.
var legacyMessages = map[string]bool{"connection_init": true, "start": true, "stop": true, "connection_terminate": true}

// keepAliveMessage is graphql-ws's keep-alive.
var keepAliveMessage = json.RawMessage(`{"type":"ka"}`)

// pingLegacy pings ws, a socket of legacyProtocol: a pong within WriteTimeout counts as the
// peer's message. The pong is waited for on a goroutine of its own, one per socket at most:
// a peer that answers none would otherwise hold one of pingAll's goroutines for WriteTimeout
// each round.
func (r *Registry) pingLegacy(ws *wsConn) {
	if ws.WriteJSON(keepAliveMessage) != nil || !ws.ponging.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer ws.ponging.Store(false)
		ctx, cancel := context.WithTimeout(r.ctx, r.opts.WriteTimeout)
		defer cancel()
		if ws.ws.Ping(ctx) == nil {
			ws.missed.Store(0)
		}
	}()
}
