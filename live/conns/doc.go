// Package conns holds the subscriber connections of an instance: the Registry of every
// WebSocket and SSE stream, under the caps of its key (Caps, shared by every instance through
// Leases in Redis) and the capacity of the instance (Capacity), and cuts off revoked or
// suspended keys (KeyCheck) and, at shutdown, everything.
//
// A Conn is the live.Conn of the subscriptions it runs: it charges their pages to its key,
// and is cut off with one of live's close codes. Package wire carries the connections over
// the wire; conns knows nothing of protocols.
package conns
