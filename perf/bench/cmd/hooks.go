package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"petstore/perf/bench/internal/loadgen"
)

// hookDeadline is how long a cell of the webhook row waits, after its load, for every pet it
// created to be delivered: a pet later than that fails the bench.
const hookDeadline = time.Minute

// hookReceiver is the webhook endpoint of the post-hook row: a net/http server in this process
// that answers 204 to every delivery and counts them, beside the pets its service created
// (201 answers), so that each cell can wait until every pet it created was delivered.
type hookReceiver struct {
	srv  *http.Server
	url  string
	got  atomic.Int64 // deliveries received
	want int64        // pets created on the service since the endpoint's 201
}

// listenHooks starts a receiver on a free loopback port.
func listenHooks() (*hookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hookReceiver{url: "http://" + ln.Addr().String() + "/hooks"}
	h.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// register creates the receiver's endpoint on the service s with its dataset's key.
func (h *hookReceiver) register(ctx context.Context, s *server) error {
	body := `{"url":"` + h.url + `","events":["pet.created"]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.addr+"/v1/webhooks", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.data.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("POST /v1/webhooks: got %d %s; want 201", resp.StatusCode, answer)
	}
	return nil
}

// drain adds created pets to those the receiver waits for, waits until every one was
// delivered and returns how long it waited.
func (h *hookReceiver) drain(ctx context.Context, created int) (time.Duration, error) {
	h.want += int64(created)
	start := time.Now()
	for h.got.Load() < h.want {
		if time.Since(start) > hookDeadline {
			return 0, fmt.Errorf("webhooks: %d of %d pets not delivered %s after the load", h.want-h.got.Load(), h.want, hookDeadline)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return time.Since(start), nil
}

// deliver drains the pets a run created, res, and notes in sum the deliveries received per
// second of the run (those after got, the count when it began) and how long after it the
// last arrived.
func (h *hookReceiver) deliver(ctx context.Context, res loadgen.Result, got int64, sum *loadgen.Summary) error {
	during := h.got.Load() - got
	tail, err := h.drain(ctx, res.Statuses[http.StatusCreated])
	if sum.Seconds > 0 {
		sum.DeliveredPS = float64(during) / sum.Seconds
	}
	sum.DeliveryTailS = tail.Seconds()
	return err
}

// close stops the receiver.
func (h *hookReceiver) close() { _ = h.srv.Close() }

// layOutHooks seeds the webhook database, starts the service on it with one endpoint
// registered, whose receiver runs in this process (hookReceiver), and adds the POST row on it;
// then a second service on it with PETSTORE_WEBHOOK_DELIVER=false, whose pets the first
// delivers, and the POST row on that one: the cost of the webhooks on the request path alone.
func (b *bench) layOutHooks(ctx context.Context) error {
	if !b.wants(rowPostHook) && !b.wants(rowPostWorker) {
		return nil
	}
	dsn, err := siblingDB(b.cfg.mysql, "_hooks")
	if err != nil {
		return err
	}
	data, err := b.seedDB(ctx, dsn, b.cfg.rows)
	if err != nil {
		return err
	}
	// The receiver listens on loopback, which the service refuses by default.
	s, err := b.start(ctx, "service/mysql-hooks", colService, &data, map[string]string{"PETSTORE_WEBHOOK_ALLOW_PRIVATE": "true"})
	if err != nil {
		return err
	}
	if s.hook, err = listenHooks(); err != nil {
		return err
	}
	if err := s.hook.register(ctx, s); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	b.add(rowPostHook, "REST POST /v1/pets, one webhook endpoint · MySQL", loadgen.Post, s)
	api, err := b.start(ctx, "service/mysql-hooks-api", colService, &data, map[string]string{"PETSTORE_WEBHOOK_DELIVER": "false"})
	if err != nil {
		return err
	}
	api.hook = s.hook // the first service delivers its pets, to the same receiver
	b.add(rowPostWorker, "REST POST /v1/pets, one endpoint, delivered elsewhere · MySQL", loadgen.Post, api)
	return nil
}
