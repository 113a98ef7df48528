package main

import (
	"context"
	"encoding/json"
	"fmt"
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
