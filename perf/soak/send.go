package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// outcome is the answer to one request.
type outcome struct {
	status string // the HTTP status code, or statusTimeout / statusNetErr
	code   int    // 0 on a transport failure
	header http.Header
	body   []byte
}

// Pseudo statuses of requests that got no HTTP answer.
const (
	statusTimeout = "timeout"
	statusNetErr  = "neterr"
)

// request returns a request with the run's key.
func (w *worker) request(ctx context.Context, method, url string, body []byte) *http.Request {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, r) // method and URL are well formed
	req.Header.Set("Authorization", w.auth)
	return req
}

// send sends req, reads the whole answer and records it. It reports false, recording
// nothing, when ctx ended first: the run is over, not the service.
func (w *worker) send(ctx context.Context, kind string, req *http.Request) (outcome, bool) {
	start := time.Now()
	resp, err := w.client.Do(req)
	var o outcome
	if err == nil {
		o.code, o.header = resp.StatusCode, resp.Header
		o.body, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		_ = resp.Body.Close()
	}
	end := time.Now()
	if err != nil && ctx.Err() != nil {
		return outcome{}, false
	}
	o.status = statusOf(o.code, err)
	if err != nil {
		o.code = 0
	}
	w.sent.Add(1)
	if failure(o.status) {
		w.failed.Add(1)
	}
	w.rec.add(kind, o.status, start, end)
	return o, true
}

// statusOf returns the status name of an answer with code, or of err.
func statusOf(code int, err error) string {
	var netErr net.Error
	switch {
	case err == nil:
		return strconv.Itoa(code)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return statusTimeout
	default:
		return statusNetErr
	}
}

// failure reports whether status is a 5xx or no answer at all.
func failure(status string) bool {
	return status == statusTimeout || status == statusNetErr || status[0] == '5'
}
