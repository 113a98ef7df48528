package live

import (
	"context"

	"petstore/apierr"
)

// Conn is what a subscription needs of the connection it runs on (conns.Conn is the
// service's): to be cut off, to charge its key for the pages it reads from the database, and to
// end with an error without the connection. Keeping it this small lets the Hub know nothing
// of caps, keys or transports.
type Conn interface {
	// Cut closes the connection with a close code and reason (a subscriber too slow, or whose
	// resume could not read the database); the first call wins.
	Cut(code int, reason string)
	// Charge charges n requests to the connection's key; its error refuses the page.
	Charge(ctx context.Context, n int) error
	// End ends the subscription of ctx with err, not the connection: the protocol's error
	// message of the operation on a WebSocket, an error event before complete on an SSE stream.
	End(ctx context.Context, err *apierr.Error)
}
