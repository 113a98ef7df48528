package live

import "encoding/json"

// transportProtocol is graphql-transport-ws, the protocol of the graphql-ws library: the
// server pings and its clients answer pong.
const transportProtocol = "graphql-transport-ws"

// transportMessages are the types of message a graphql-transport-ws client may send.
var transportMessages = map[string]bool{"connection_init": true, "subscribe": true, "complete": true, "ping": true, "pong": true}

// pingMessage is graphql-transport-ws's ping.
var pingMessage = json.RawMessage(`{"type":"ping"}`)

// pingTransport pings c, a socket of transportProtocol: its pong counts as the peer's message.
func (c *wsConn) pingTransport() { _ = c.WriteJSON(pingMessage) }
