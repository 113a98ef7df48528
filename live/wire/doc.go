// Package wire carries the subscriptions of a conns.Registry over the wire: the WebSocket
// upgrade (Upgrade, Handshake), gqlgen's WebSocket transport on it (Websocket; the
// graphql-transport-ws and graphql-ws protocols, checked message by message, and pinged), and
// GraphQL over Server-Sent Events (Stream). Each socket and stream is detached from net/http
// with small buffers, so that an idle subscriber costs little memory.
package wire
