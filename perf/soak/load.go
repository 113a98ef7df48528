package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Kinds of request, as the summary names them.
const (
	kindList   = "list"   // GET /v1/pets?limit=20[&status=...]
	kindCreate = "create" // POST /v1/pets with a new Idempotency-Key, and its retries
	kindGet    = "get"    // GET /v1/pets/{id} of a pet the worker created
	kindReplay = "replay" // POST /v1/pets again with an acknowledged key: must replay
)

// The mix, in percent: the rest are gets.
const (
	listPercent   = 60
	createPercent = 25
	// replayPercent of the acknowledged creates are sent once more on purpose.
	replayPercent = 10
)

// Backoff of retried creates: exponential from backoffBase up to backoffMax, with jitter.
const (
	backoffBase = 50 * time.Millisecond
	backoffMax  = 4 * time.Second
)

// statuses is the pet status values.
var statuses = []string{"available", "pending", "sold"}

// pet is the part of a Pet answer the checks read.
type pet struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// newPet is a create request's body.
type newPet struct {
	Name       string `json:"name"`
	CategoryID int    `json:"categoryId"`
	Status     string `json:"status,omitempty"`
}

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

// driver is what every worker shares.
type driver struct {
	client   *http.Client
	base     string // http://127.0.0.1:PORT
	auth     string // "Bearer KEY"
	run      string // prefix of the run's names and idempotency keys
	sent     atomic.Int64
	failed   atomic.Int64 // 5xx and transport failures
	retrying atomic.Int64 // creates (and repeats) waiting for a retry after a failed attempt
}

// newDriver returns a driver with one keep-alive transport for every worker, never proxied.
func newDriver(base, key string, workers int, timeout time.Duration) *driver {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        workers * 2,
		MaxIdleConnsPerHost: workers * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &driver{
		client: &http.Client{Transport: tr, Timeout: timeout},
		base:   base, auth: "Bearer " + key,
		run: "soak-" + strconv.FormatInt(time.Now().UnixNano(), 36),
	}
}

// worker is one client sending one request at a time.
type worker struct {
	*driver
	id      int
	rng     *rand.Rand
	rec     *recorder
	created []pet   // acknowledged pets, for gets
	posts   []*post // every create started
}

// newWorker returns worker id of d, for a load that ends at loadEnd.
func newWorker(d *driver, id int, loadEnd time.Time) *worker {
	return &worker{driver: d, id: id, rng: rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano()))), rec: newRecorder(loadEnd)}
}

// loop sends the mix until load ends; a create started before that is retried until
// acknowledged or settle ends.
func (w *worker) loop(load, settle context.Context) {
	for load.Err() == nil {
		switch r := w.rng.IntN(100); {
		case r < listPercent:
			w.list(load)
		case r < listPercent+createPercent:
			w.create(settle)
		default:
			w.get(load)
		}
	}
}

// list sends GET /v1/pets?limit=20, a third of the time with a status.
func (w *worker) list(ctx context.Context) {
	url := w.base + "/v1/pets?limit=20"
	if w.rng.IntN(3) == 0 {
		url += "&status=" + statuses[w.rng.IntN(len(statuses))]
	}
	o, ok := w.send(ctx, kindList, w.request(ctx, http.MethodGet, url, nil))
	if ok && o.code != http.StatusOK && o.code < 500 && o.code != 0 {
		w.rec.unexpected(kindList, o)
	}
}

// get sends GET /v1/pets/{id} of an acknowledged pet and checks the answer; with none yet,
// it lists instead.
func (w *worker) get(ctx context.Context) {
	if len(w.created) == 0 {
		w.list(ctx)
		return
	}
	want := w.created[w.rng.IntN(len(w.created))]
	o, ok := w.send(ctx, kindGet, w.request(ctx, http.MethodGet, fmt.Sprintf("%s/v1/pets/%d", w.base, want.ID), nil))
	switch {
	case !ok || o.code == 0 || o.code >= 500:
	case o.code != http.StatusOK:
		w.rec.unexpected(kindGet, o)
	default:
		var got pet
		if err := json.Unmarshal(o.body, &got); err != nil || got != want {
			w.rec.mismatch(fmt.Sprintf("GET /v1/pets/%d answered %s; want id %d named %q", want.ID, o.body, want.ID, want.Name))
		}
	}
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
