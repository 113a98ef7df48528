package gqlhttp

import (
	"bytes"
	"net/http"

	"petstore/internal/etag"
)

// heldAnswer holds the answer of a GET until it is complete, so that its ETag can be worked out
// before anything is sent (send).
type heldAnswer struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

// WriteHeader holds the status.
func (h *heldAnswer) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

// Write holds b.
func (h *heldAnswer) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(b)
}

// send sends the held answer to r. A successful one (200, no errors) carries a strong ETag of
// its body and media type, and Cache-Control: private, no-cache; when r's If-None-Match matches
// that ETag (etag.NoneMatch), it goes as 304 Not Modified without a body.
func (h *heldAnswer) send(r *http.Request) {
	w := h.ResponseWriter
	if h.status == http.StatusOK && bytes.HasPrefix(h.body.Bytes(), []byte(`{"data"`)) {
		hdr := w.Header()
		// A query may read the newest pets: revalidated at each use.
		if etag.Set(hdr, r.Header, h.body.Bytes(), hdr.Get("Content-Type"), etag.Revalidate) {
			delete(hdr, "Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if h.status != 0 {
		w.WriteHeader(h.status)
	}
	_, _ = w.Write(h.body.Bytes())
}
