package live

// Close codes of a WebSocket the service closes. The 44xx ones are graphql-transport-ws's,
// given to graphql-ws sockets too. A client may reconnect after 1001 and 1013 (Retryable); the
// others are final.
const (
	CloseGoingAway   = 1001 // the instance shuts down: reconnect (elsewhere) and resume with after
	CloseSlow        = 1008 // policy violation: the subscriber did not keep up
	CloseRetry       = 1013 // try again later: the database or the Redis of the caps failed or lost the slot, or the instance drains
	CloseBadRequest  = 4400 // MaxRefusedInRow refused operations in a row, or a message the protocol forbids
	CloseForbidden   = 4403 // missing, unknown, revoked or suspended key
	CloseInitTimeout = 4408 // no connection_init in time
	CloseDuplicateID = 4409 // a subscribe (start) with the id of an operation still active
	CloseTooMany     = 4429 // at connection_init: the key holds as many connections as its plan allows
	CloseInitAgain   = 4429 // a second connection_init
)

// ReasonSlow is the close reason of a subscriber that does not keep up.
const ReasonSlow = "subscriber too slow: its buffer of events is full; reconnect and resume with after"

// Retryable reports whether a client may reconnect, and resume with after, once the service
// closed its connection with code: the instance shut down or drains (1001), or something the
// connection relies on failed or lost its state (1013). The graphql-ws client retries these
// codes. An operation cut off with one is not completed first (graphql-ws would take the
// complete as the end of the subscription and not resume it), and an SSE stream cut off with
// one ends without its complete event, which the graphql-sse client retries.
func Retryable(code int) bool { return code == CloseGoingAway || code == CloseRetry }
