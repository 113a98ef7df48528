package ratelimit

import (
	"bufio"
	"errors"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
)

// Meter is the gin.HandlerFunc of the limiter for requests charged by what they do, placed
// where Middleware would be: GraphQL operations over HTTP, which cost what their operation
// costs (graph.OperationCost). A request of a valid key is not charged here: its handler
// charges it once, through the ResponseWriter that Meter puts in place (ChargeRequest, which
// graph.RequestMeter names), when it knows the cost; so its rate-limit headers are set then. A
// request answered before its handler charged it (a body that is not a GraphQL request, a
// refusal of the router) is charged one request when its answer starts, as Middleware would
// have charged it. Any other request (no valid key, or refused at the gate) is charged and
// answered as Middleware does.
func (l *Limiter) Meter(c *gin.Context) {
	subj, p, ok := l.subjectOf(c)
	switch {
	case !ok:
	case subj.KeyID == 0:
		l.charge(c, subj, p)
	default:
		c.Writer = &meter{ResponseWriter: c.Writer, l: l, c: c, subj: subj, p: p, plan: auth.FromContext(c.Request.Context()).Plan.Name}
	}
}

// meter is the ResponseWriter of a request charged by its handler (Meter): the first call of
// ChargeRequest decides, or else the first write. Once it has answered the request itself
// (429, or 503 failing closed), whatever the handler writes is dropped.
type meter struct {
	gin.ResponseWriter
	l    *Limiter
	c    *gin.Context
	subj Subject
	p    Policy
	plan string

	decided  bool
	answered bool  // the meter wrote the answer
	units    int   // charged
	err      error // the refusal, when refused
}

// errAnswered is what a write gets once the meter has answered the request.
var errAnswered = errors.New("ratelimit: the request was answered by the rate limiter")

// ChargeRequest charges the request cost units (at least one) and sets its rate-limit headers,
// once: later calls charge nothing and return what the first returned. It returns the units
// charged and nil when the request is admitted (failing open, uncounted: cost), else its
// refusal: rate_limited or key_suspended, and unavailable failing closed, which the meter has
// answered itself (429 or 503, with Retry-After), so that the caller should stop; or
// invalid_request, for an operation costing more than a window's whole limit, charged one unit,
// which the caller answers.
func (m *meter) ChargeRequest(cost int) (int, error) {
	if m.decided {
		return m.units, m.err
	}
	m.decided = true
	cost = max(cost, 1)
	d, refusal, err := m.l.spend(m.c.Request.Context(), m.subj, m.p, int64(cost), m.plan)
	switch {
	case err != nil:
		if m.l.storeFailed(m.c, m.p, err) {
			m.units = cost
			return m.units, nil
		}
		m.answered, m.err = true, unavailable(err)
	case refusal == nil:
		setHeaders(m.Header(), d)
		m.units = cost
	case refusal.Code == apierr.InvalidRequest:
		setHeaders(m.Header(), d)
		m.units, m.err = 1, refusal
	default:
		refuse(m.c, d, refusal)
		m.answered, m.err = true, refusal
	}
	return m.units, m.err
}

// settle charges one request if nothing was charged yet, and reports whether the handler may
// still write its answer.
func (m *meter) settle() bool {
	if !m.decided {
		_, _ = m.ChargeRequest(1)
	}
	return !m.answered
}

// WriteHeader writes the status, once the request is charged.
func (m *meter) WriteHeader(code int) {
	if m.settle() {
		m.ResponseWriter.WriteHeader(code)
	}
}

// WriteHeaderNow writes the head, once the request is charged.
func (m *meter) WriteHeaderNow() {
	if m.settle() {
		m.ResponseWriter.WriteHeaderNow()
	}
}

// Write writes b, once the request is charged.
func (m *meter) Write(b []byte) (int, error) {
	if !m.settle() {
		return 0, errAnswered
	}
	return m.ResponseWriter.Write(b)
}

// WriteString writes s, once the request is charged.
func (m *meter) WriteString(s string) (int, error) {
	if !m.settle() {
		return 0, errAnswered
	}
	return m.ResponseWriter.WriteString(s)
}

// Flush sends what was written, once the request is charged.
func (m *meter) Flush() {
	if m.settle() {
		m.ResponseWriter.Flush()
	}
}

// Hijack takes the connection, once the request is charged.
func (m *meter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if !m.settle() {
		return nil, nil, errAnswered
	}
	return m.ResponseWriter.Hijack()
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (m *meter) Unwrap() http.ResponseWriter { return m.ResponseWriter }
