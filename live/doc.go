// Package live delivers the petAdded subscription: which pets a subscriber gets, in which
// order, and when a connection is refused or cut off.
//
// # From commit to subscriber
//
// A writer calls Hub.Publish with a pet's id once its transaction committed. Publish only
// wakes the Hubs: this instance's, and through Bus (Redis pub/sub) every other's. Each Hub
// reads the pets above its mark with the listing's statement (HubOptions.Read, which never
// returns a pet while a lower id may still commit) and hands them out in id order. So no
// subscriber gets a rolled-back pet or a higher id before a lower one, and a lost wake-up is
// made up by the next read, at the latest PollEvery later.
//
// # Resume
//
// A subscription with after joins the Hub first, buffering its events, pages through the
// database from after, then sends the buffered events above the last pet it sent: no pet is
// skipped or sent twice. The subscribe operation pays for the first page; each further page
// is one request of the key's budget, and a refused charge ends the subscription with the
// refusal, the pets sent carrying their cursors to resume from.
//
// # Bounds
//
// A subscriber whose buffer is full when an event comes falls back to paging, as a resume
// does; one that takes no event for SlowAfter is cut off (Conn.Cut, the close saying why)
// rather than kept growing.
//
// # Packages
//
// live holds the delivery alone: the Hub, the Event and the Bus. What a subscription needs of
// its connection is the small Conn interface, so that its subpackages import live and
// never the other way:
//
//	live/        delivery: which pets a subscriber gets, in which order, and when it is cut off
//	live/conns/  connections and caps: the Registry, conns.Conn (a live.Conn), caps, capacity, leases, key checks
//	live/wire/   transports: WebSocket (graphql-transport-ws, graphql-ws) and SSE, over a conns.Registry
package live
