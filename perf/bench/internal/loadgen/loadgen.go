// Package loadgen is the HTTP/1.1 load generator of the benchmarks: a fixed number of
// keep-alive connections, each sending one request at a time (closed loop) for a duration or
// a request count, recording every latency. It writes requests and parses answers itself,
// without net/http's client, so that the driver takes as little as possible of the CPU it
// shares with the servers it measures.
package loadgen

import (
	"bufio"
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Builder appends the bytes of one whole HTTP/1.1 request to buf and returns the result. It is
// called with each worker's own buf (its length reset to zero), its worker number and the
// number of requests that worker has sent so far, so that it can make each request unique
// without locks.
type Builder func(buf []byte, worker, seq int) []byte

// Options describe one run.
type Options struct {
	Addr     string        // host:port of the server
	Conns    int           // connections, each one request at a time; default 64
	Duration time.Duration // how long to send; ignored when Requests is set
	Requests int           // stop after this many requests in all; 0: run for Duration
	Build    Builder
}

// Result is what a run measured.
type Result struct {
	Requests  int           // answered requests plus failed attempts
	Elapsed   time.Duration // from the first request to the last answer
	Statuses  map[int]int   // answers by HTTP status
	NetErrors int           // attempts that got no answer (connect, write or read failures)
	// CPU is the CPU time (user and system) the whole process used while the connections ran:
	// the driver's own cost when nothing else runs in its process, to set beside the server's.
	CPU       time.Duration
	latencies []time.Duration
}

// dialTimeout bounds one connection attempt; ioTimeout bounds one request and its answer.
const (
	dialTimeout = 5 * time.Second
	ioTimeout   = 30 * time.Second
	retryPause  = 20 * time.Millisecond // after a failed attempt, so that a dead server is not spun on
)

// Run sends requests as opts say until the duration passes, the count is reached or ctx is done.
func Run(ctx context.Context, opts Options) (Result, error) {
	if opts.Build == nil || opts.Addr == "" {
		return Result{}, errors.New("loadgen: Options need Addr and Build")
	}
	if opts.Conns <= 0 {
		opts.Conns = 64
	}
	if opts.Requests <= 0 && opts.Duration <= 0 {
		return Result{}, errors.New("loadgen: Options need a Duration or a request count")
	}
	stop := newStopper(ctx, opts)
	workers := make([]*worker, opts.Conns)
	var wg sync.WaitGroup
	start, cpu := time.Now(), processCPU()
	for i := range workers {
		workers[i] = &worker{id: i, addr: opts.Addr, build: opts.Build, statuses: map[int]int{}}
		wg.Go(func() { workers[i].loop(stop) })
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU()-cpu
	res := merge(workers, elapsed)
	res.CPU = cpu
	return res, nil
}

// stopper says when a worker must stop: at a deadline, after a count, or when ctx is done.
type stopper struct {
	ctx       context.Context
	deadline  time.Time
	remaining *atomic.Int64 // nil: no count
}

func newStopper(ctx context.Context, opts Options) stopper {
	s := stopper{ctx: ctx}
	if opts.Requests > 0 {
		s.remaining = new(atomic.Int64)
		s.remaining.Store(int64(opts.Requests))
	} else {
		s.deadline = time.Now().Add(opts.Duration)
	}
	return s
}

// next reports whether a worker may send one more request.
func (s stopper) next() bool {
	if s.ctx.Err() != nil {
		return false
	}
	if s.remaining != nil {
		return s.remaining.Add(-1) >= 0
	}
	return time.Now().Before(s.deadline)
}

// worker is one connection and what it measured.
type worker struct {
	id    int
	addr  string
	build Builder

	conn      net.Conn
	r         *bufio.Reader
	buf       []byte
	seq       int
	statuses  map[int]int
	netErrors int
	latencies []time.Duration
}

// loop sends requests one at a time until s says stop.
func (w *worker) loop(s stopper) {
	w.latencies = make([]time.Duration, 0, 4096)
	defer w.close()
	for s.next() {
		if err := w.once(); err != nil {
			w.netErrors++
			w.close()
			time.Sleep(retryPause)
		}
	}
}

// once sends one request on the worker's connection, dialling it first if needed, and reads
// the answer.
func (w *worker) once() error {
	if w.conn == nil {
		if err := w.dial(); err != nil {
			return err
		}
	}
	w.buf = w.build(w.buf[:0], w.id, w.seq)
	w.seq++
	start := time.Now()
	_ = w.conn.SetDeadline(start.Add(ioTimeout))
	if _, err := w.conn.Write(w.buf); err != nil {
		return err
	}
	status, closeConn, err := readResponse(w.r)
	if err != nil {
		return err
	}
	w.latencies = append(w.latencies, time.Since(start))
	w.statuses[status]++
	if closeConn {
		w.close()
	}
	return nil
}

func (w *worker) dial() error {
	conn, err := net.DialTimeout("tcp", w.addr, dialTimeout)
	if err != nil {
		return err
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetNoDelay(true)
	}
	w.conn = conn
	if w.r == nil {
		w.r = bufio.NewReaderSize(conn, 64<<10)
	} else {
		w.r.Reset(conn)
	}
	return nil
}

func (w *worker) close() {
	if w.conn != nil {
		_ = w.conn.Close()
		w.conn = nil
	}
}

// merge adds up what the workers measured.
func merge(workers []*worker, elapsed time.Duration) Result {
	res := Result{Elapsed: elapsed, Statuses: map[int]int{}}
	for _, w := range workers {
		res.NetErrors += w.netErrors
		res.latencies = append(res.latencies, w.latencies...)
		for st, n := range w.statuses {
			res.Statuses[st] += n
		}
	}
	res.Requests = len(res.latencies) + res.NetErrors
	slices.Sort(res.latencies)
	return res
}
