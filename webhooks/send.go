package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"petstore/internal/version"
	"petstore/models"
)

// result is the outcome of one attempt of a delivery.
type result struct {
	job    job
	status int    // the receiver's HTTP status; 0 when none came
	err    string // why the attempt failed; "" when it was acknowledged
	gone   bool   // the attempt was cut short by shutdown: not recorded, sent again after its lease
}

// eventBody is the body of a delivery: the event type, its time, and its data.
type eventBody struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      eventData `json:"data"`
}

// eventData is the data of pet.created: the pet's cursor (to page on, or replay from) and
// the pet as GET /v1/pets lists it.
type eventData struct {
	Cursor string     `json:"cursor"`
	Pet    models.Pet `json:"pet"`
}

// payload returns the body of the delivery j.
func (j job) payload() ([]byte, error) {
	return json.Marshal(eventBody{Type: PetCreated, Timestamp: j.EventAt.UTC(), Data: eventData{Cursor: models.EncodeCursor(j.PetID),
		Pet: models.Pet{ID: j.PetID, Name: j.Name, CategoryID: j.CategoryID, Status: j.Status}}})
}

// secrets returns the secrets that sign j: the endpoint's, and the one a rotation replaced
// while its grace period lasts.
func (j job) secrets(now time.Time) []string {
	s := []string{j.Secret}
	if j.OldSecret != nil && j.OldSecretUntil != nil && now.Before(*j.OldSecretUntil) {
		s = append(s, *j.OldSecret)
	}
	return s
}

// userAgent is the User-Agent of every delivery.
var userAgent = "petstore-webhooks/" + version.Version()

// send makes one attempt of j: a POST of its payload, signed, which a 2xx within the timeout
// acknowledges; redirects are not followed. An attempt cut short as ctx ends is gone.
func (d *Dispatcher) send(ctx context.Context, j job) result {
	r := result{job: j}
	now := time.Now()
	sig, err := newSigner(j.secrets(now)...)
	if err != nil {
		r.err = err.Error()
		return r
	}
	body, err := j.payload()
	if err != nil {
		r.err = err.Error()
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.URL, bytes.NewReader(body))
	if err != nil {
		r.err = err.Error()
		return r
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	h.Set("webhook-id", j.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig.sign(j.ID, now, body))
	resp, err := d.client.Do(req)
	if err != nil {
		r.err, r.gone = err.Error(), ctx.Err() == context.Canceled
		return r
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so that the connection is kept
	_ = resp.Body.Close()
	r.status = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r.err = "the receiver answered " + strconv.Itoa(resp.StatusCode)
	}
	return r
}

// writeResults records the results of attempts until the channel closes: a batch of those
// ready at once in few statements. A result it fails to record leaves its delivery claimed
// until the lease ends, when it is sent again: at least once.
func (d *Dispatcher) writeResults() {
	batch := make([]result, 0, claimBatch)
	for r := range d.results {
		if r.gone {
			continue
		}
		batch = append(batch[:0], r)
	more:
		for len(batch) < cap(batch) {
			select {
			case r, ok := <-d.results:
				if !ok {
					break more
				}
				if !r.gone {
					batch = append(batch, r)
				}
			default:
				break more
			}
		}
		if err := d.record(batch); err != nil {
			slog.Warn("webhooks: recording delivery results failed", "error", err)
		}
	}
}
