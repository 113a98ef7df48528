package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
	"petstore/internal/jsonbody"
	"petstore/store"
)

// Header names: the request header of the IETF draft, and the contract's replay marker.
const (
	// HeaderKey is the request header that names a retryable request.
	HeaderKey = "Idempotency-Key"
	// HeaderReplayed marks an answer that repeats a recorded one.
	HeaderReplayed = "Idempotent-Replayed"
)

// MaxKeyLength is the longest Idempotency-Key accepted, in bytes (printable ASCII).
const MaxKeyLength = 255

// Middleware makes the route after it safe to retry. Place it after auth.Require and the
// body limit, right before the handler. A request without an Idempotency-Key header passes
// through untouched. Otherwise it answers 400 invalid_request for a malformed header or one
// sent twice, 413 payload_too_large for a body over jsonbody.MaxBytes, 422
// idempotency_key_reused when the key was used for another request, 409
// idempotency_key_in_use (Retry-After: 1) while the first request holds the key, the recorded
// answer with Idempotent-Replayed: true when it has one, 503 unavailable when the database
// does not answer (500 when it refuses); and else runs the handler in a transaction and
// records its answer (see the package documentation).
func (s *Records) Middleware(c *gin.Context) {
	key, present, err := keyFrom(c.Request.Header)
	if !present {
		return
	}
	if err != nil {
		abort(c, err)
		return
	}
	sc, err := s.scopeOf(c, key)
	if err != nil {
		abort(c, err)
		return
	}
	cl, rec, err := s.acquire(c.Request.Context(), sc)
	switch {
	case errors.Is(err, errContended):
		inUse(c)
	case err != nil:
		abort(c, store.APIError(err))
	case rec != nil:
		respond(c, sc, rec)
	default:
		s.execute(c, cl)
	}
}

// keyFrom returns the Idempotency-Key of h and whether h has one; a value sent twice, empty,
// longer than MaxKeyLength or with a byte outside 0x20-0x7E is an invalid_request error.
func keyFrom(h http.Header) (string, bool, error) {
	vs := h.Values(HeaderKey)
	switch {
	case len(vs) == 0:
		return "", false, nil
	case len(vs) > 1:
		return "", true, apierr.Invalid("the %s header must be sent at most once; got %d", HeaderKey, len(vs))
	case !validKey(vs[0]):
		return "", true, apierr.Invalid("the %s header must be 1 to %d printable ASCII characters (0x20-0x7E)", HeaderKey, MaxKeyLength)
	}
	return vs[0], true, nil
}

// validKey reports whether k is 1 to MaxKeyLength printable ASCII characters.
func validKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyLength {
		return false
	}
	for i := range len(k) {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// scopeOf returns the scope of the request: its API key, its Idempotency-Key and its
// fingerprint. It reads the body (and puts it back for the handler).
func (s *Records) scopeOf(c *gin.Context, key string) (scope, error) {
	p := auth.FromContext(c.Request.Context())
	if p == nil {
		return scope{}, apierr.Wrap(errors.New("idempotency: Middleware runs before auth.Require"))
	}
	body, err := readBody(c.Request)
	if err != nil {
		return scope{}, err
	}
	return scope{keyID: p.KeyID, key: key, hash: fingerprint(c.Request.Method, c.FullPath(), body), body: body}, nil
}

// readBody reads r's body (jsonbody.Read: at most jsonbody.MaxBytes) and replaces it by a
// reader of the bytes read.
func readBody(r *http.Request) ([]byte, error) {
	body, err := jsonbody.Read(r.Body, r.ContentLength)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// fingerprint identifies a request: SHA-256 over its method, its route and its body, byte
// for byte. The same key sent to another route, or with another body (even JSON that means
// the same), is another request.
func fingerprint(method, route string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method + " " + route + "\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// respond answers a request whose key has a live record made by another request.
func respond(c *gin.Context, sc scope, rec *record) {
	switch {
	case rec.RequestHash != sc.hash:
		abort(c, apierr.New(apierr.IdempotencyKeyReused,
			"the %s was already used with a different request; send a new key for a new request", HeaderKey))
	case rec.State == stateDone:
		replay(c, rec.replayed())
	default:
		inUse(c)
	}
}

// replay sends a recorded answer again, marked Idempotent-Replayed.
func replay(c *gin.Context, a answer) {
	h := c.Writer.Header()
	for name, v := range a.headers {
		h.Set(name, v)
	}
	h.Set(HeaderReplayed, "true")
	c.Writer.WriteHeader(a.status)
	c.Writer.WriteHeaderNow()
	_, _ = c.Writer.Write(a.body)
	c.Abort()
}

// inUse answers 409: the first request with the key is still running.
func inUse(c *gin.Context) {
	c.Header("Retry-After", "1")
	abort(c, apierr.New(apierr.IdempotencyKeyInUse,
		"a request with this %s is still in progress; retry after 1 second", HeaderKey))
}

// abort writes err as the Error body and stops the chain.
func abort(c *gin.Context, err error) {
	apierr.Write(c.Writer, c.Request, err)
	c.Abort()
}

// errNotRecorded is what a client sees when its answer could not be recorded: nothing was
// stored (or, if the commit happened after all, a retry gets the answer).
func errNotRecorded(err error) error {
	return &apierr.Error{Code: apierr.Unavailable,
		Message: "the request could not be completed; retry it with the same " + HeaderKey, Err: err}
}

// logRelease logs a claim that could not be released at once: it is retried until it is, or
// until its lease runs out.
func logRelease(ctx context.Context, cl *claim, err error) {
	slog.WarnContext(ctx, "idempotency: releasing a key failed; retrying until the database answers or the lease runs out",
		"keyID", cl.keyID, "err", err)
}
