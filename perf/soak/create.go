package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Backoff of retried creates: exponential from backoffBase up to backoffMax, with jitter.
const (
	backoffBase = 50 * time.Millisecond
	backoffMax  = 4 * time.Second
)

// post is one create: its name and Idempotency-Key are unique to it, its body is sent
// byte for byte the same on every retry.
type post struct {
	name     string
	key      string
	body     []byte
	id       int64         // acknowledged id; 0 while unacknowledged
	attempts int           // requests sent until acknowledged (or the run ended)
	took     time.Duration // from the first attempt to the 201
	replayed bool          // the 201 carried Idempotent-Replayed: an earlier attempt had been stored
	inUse    int           // 409 idempotency_key_in_use answers
}

// create sends a new pet with a new Idempotency-Key, retries it until acknowledged, and
// sometimes sends it once more to check the replay.
func (w *worker) create(ctx context.Context) {
	p := w.newPost()
	w.posts = append(w.posts, p)
	got, ok := w.postUntilCreated(ctx, kindCreate, p)
	if !ok {
		return
	}
	p.id, p.replayed = got.ID, got.replayed
	w.created = append(w.created, pet{ID: got.ID, Name: p.name})
	if w.rng.IntN(100) < replayPercent {
		w.replay(ctx, p)
	}
}

// replay sends an acknowledged create again: it must answer 201 with Idempotent-Replayed
// and the same id.
func (w *worker) replay(ctx context.Context, p *post) {
	got, ok := w.postUntilCreated(ctx, kindReplay, p)
	switch {
	case !ok:
	case !got.replayed || got.ID != p.id:
		w.rec.mismatch(fmt.Sprintf("a repeat of Idempotency-Key %s got id %d (Idempotent-Replayed: %t); want a replay of id %d",
			p.key, got.ID, got.replayed, p.id))
	default:
		w.rec.replays++
	}
}

// newPost returns the worker's next create: a unique name and key, a random category and
// status.
func (w *worker) newPost() *post {
	name := fmt.Sprintf("%s-w%03d-%07d", w.run, w.id, len(w.posts))
	np := newPet{Name: name, CategoryID: 1 + w.rng.IntN(20)}
	if s := w.rng.IntN(len(statuses) + 1); s < len(statuses) {
		np.Status = statuses[s]
	}
	body, _ := json.Marshal(np) // strings and ints only
	return &post{name: name, key: "key-" + name, body: body}
}

// created is a 201 answer to a create.
type created struct {
	pet
	replayed bool
}

// postUntilCreated sends p until it is answered 201: a transport failure, a 5xx, a 409 or a
// 429 is retried with the same key and body after an exponential backoff with jitter (at
// least Retry-After). Any other answer, or the end of ctx, gives up.
func (w *worker) postUntilCreated(ctx context.Context, kind string, p *post) (created, bool) {
	start, retrying := time.Now(), false
	defer func() {
		if retrying {
			w.retrying.Add(-1)
		}
	}()
	for attempt := 0; ; attempt++ {
		o, ok := w.send(ctx, kind, w.postRequest(ctx, p))
		if !ok {
			return created{}, false
		}
		if kind == kindCreate {
			p.note(attempt, time.Since(start), o.code)
		}
		if o.code == http.StatusCreated {
			return w.createdFrom(kind, p, o)
		}
		if !retryable(o.code) {
			w.rec.unexpected(kind, o)
			return created{}, false
		}
		if !retrying {
			retrying = true
			w.retrying.Add(1)
		}
		if sleep(ctx, retryDelay(attempt, o.header, w.rng)) != nil {
			return created{}, false
		}
	}
}

// postRequest returns the request of p: the same body and Idempotency-Key every time.
func (w *worker) postRequest(ctx context.Context, p *post) *http.Request {
	req := w.request(ctx, http.MethodPost, w.base+"/v1/pets", p.body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", p.key)
	return req
}

// note records that attempt (from 0) of p was answered code, after took from the first.
func (p *post) note(attempt int, took time.Duration, code int) {
	p.attempts, p.took = attempt+1, took
	if code == http.StatusConflict {
		p.inUse++
	}
}

// createdFrom reads a 201 answer to p.
func (w *worker) createdFrom(kind string, p *post, o outcome) (created, bool) {
	var c created
	if err := json.Unmarshal(o.body, &c.pet); err != nil || c.ID <= 0 || c.Name != p.name {
		w.rec.mismatch(fmt.Sprintf("%s of %q answered 201 %s", kind, p.name, o.body))
		return created{}, false
	}
	c.replayed = o.header.Get("Idempotent-Replayed") == "true"
	return c, true
}

// retryable reports whether a create answered code (0: no answer) is retried.
func retryable(code int) bool {
	return code == 0 || code >= 500 || code == http.StatusConflict || code == http.StatusTooManyRequests
}

// retryDelay returns the wait before retry attempt+1: an exponential backoff with equal
// jitter (half fixed, half random), at least the answer's Retry-After.
func retryDelay(attempt int, h http.Header, rng *rand.Rand) time.Duration {
	d := backoffMax
	if attempt < 16 {
		d = min(backoffMax, backoffBase<<attempt)
	}
	d = d/2 + time.Duration(rng.Int64N(int64(d/2)+1))
	return max(d, retryAfter(h))
}

// retryAfter returns the Retry-After of h (seconds or an HTTP date), or 0.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}
