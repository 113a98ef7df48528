package ratelimit

import (
	"context"
	"net/netip"
	"time"

	"petstore/apierr"
	"petstore/auth"
)

// Resolve authenticates an Authorization header value, calling beforeRead, when not nil, with
// the key's hash before the key table is read for a key not known valid, and returning its error
// instead of reading (auth.Authenticator.Resolve).
type Resolve func(ctx context.Context, header string, beforeRead func(ctx context.Context, hash string) error) (*auth.Principal, error)

// Authenticate identifies and charges a request made outside the HTTP chain (a WebSocket's
// connection_init) from the client address addr, its key in header, as Gate, auth.Lookup and
// Middleware do an HTTP request: a valid key is charged one request to its own budget,
// whatever its address's; a missing or bad key is charged to addr, and before a key is read
// for an address over its budget, Gate's rule applies. It returns the principal, or the error
// the request gets: unauthorized, rate_limited or key_suspended (of the key, or of the address
// for a request without a valid key), or unavailable.
func (l *Limiter) Authenticate(ctx context.Context, addr netip.Addr, header string, resolve Resolve) (*auth.Principal, error) {
	subj := AddrSubject(addr)
	var refused *Decision // the address's, when the gate let the read go on
	p, err := resolve(ctx, header, func(ctx context.Context, hash string) error {
		d, readAnyway, err := l.gate(ctx, subj, hash)
		switch {
		case err != nil && !l.failOpen:
			l.noteFailure(ctx, err)
			return unavailable(err)
		case err != nil || d.Outcome == Allowed:
			return nil
		case readAnyway:
			refused = &d
			return nil
		}
		return rejection(subj, d, retrySecs(d))
	})
	switch {
	case p != nil:
		return p, l.Charge(ctx, p, 1)
	case refused != nil: // the gate let the read go on: no valid key, or none could be read
		return nil, rejection(subj, *refused, retrySecs(*refused))
	case apierr.From(err).Code != apierr.Unauthorized: // refused at the gate, or unchecked
		return nil, err
	}
	d, terr := l.store.Take(ctx, subj, l.anon, 1)
	if terr != nil {
		l.noteFailure(ctx, terr)
		if !l.failOpen {
			return nil, unavailable(terr)
		}
		return nil, err
	}
	l.storeAnswered(ctx)
	if l.observe != nil {
		l.observe(d.Outcome, AnonymousPlan)
	}
	if d.Outcome != Allowed {
		return nil, rejection(subj, d, retrySecs(d))
	}
	return nil, err
}

// retrySecs returns the whole seconds of d's Retry-After.
func retrySecs(d Decision) int64 { return int64(d.RetryAfter() / time.Second) }
