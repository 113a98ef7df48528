package main

import (
	"context"
	"log"
	"sync"
	"time"
)

// How often the run samples the service's memory and logs its progress.
const (
	rssEvery      = 5 * time.Second
	progressEvery = 15 * time.Second
)

// restartAt is when the database restart begins, as a fraction of the duration.
const restartAt = 0.4

// runResult is what the run observed.
type runResult struct {
	start, end time.Time // of the load; end includes the settle
	rec        *recorder
	posts      []*post
	restart    *restartReport // nil with -restart=false
	rss        []rssSample
	rssErr     error
	logs       []logGroup // the service's WARN and ERROR lines, once it has exited
	logErr     error
}

// drive runs the workers for the duration (and lets unacknowledged creates retry during the
// settle), restarts the database on time, samples the service's memory, and returns what
// it saw.
func drive(ctx context.Context, env *environment) *runResult {
	o := env.opts
	d := newDriver(env.svc.base, env.key, o.workers, o.timeout)
	defer d.client.CloseIdleConnections()
	start := time.Now()
	loadEnd := start.Add(o.duration)
	res := &runResult{start: start, rec: newRecorder(loadEnd)}
	load, stopLoad := context.WithDeadline(ctx, loadEnd)
	defer stopLoad()
	settle, stopSettle := context.WithDeadline(ctx, res.start.Add(o.duration+o.settle))
	defer stopSettle()
	sampler := startRSS(env.svc.pid(), rssEvery)
	restarted := make(chan *restartReport, 1)
	if o.restart {
		at := res.start.Add(time.Duration(float64(o.duration) * restartAt))
		go func() { restarted <- scheduledRestart(ctx, env, at) }()
	}
	stopProgress := logProgress(d, res.start)
	log.Printf("load: %d workers for %v", o.workers, o.duration)
	workers := make([]*worker, o.workers)
	var wg sync.WaitGroup
	for i := range workers {
		workers[i] = newWorker(d, i, loadEnd)
		wg.Go(func() { workers[i].loop(load, settle) })
	}
	wg.Wait()
	res.end = time.Now()
	stopProgress()
	if o.restart {
		res.restart = <-restarted
	}
	res.rss, res.rssErr = sampler.finish()
	for _, w := range workers {
		res.rec.merge(w.rec)
		res.posts = append(res.posts, w.posts...)
	}
	return res
}

// scheduledRestart restarts the database at the given time.
func scheduledRestart(ctx context.Context, env *environment, at time.Time) *restartReport {
	if err := sleep(ctx, time.Until(at)); err != nil {
		return &restartReport{err: err}
	}
	return restartDatabase(ctx, env.db, env.opts.outage, env.svc.base)
}

// logProgress logs the request count, failures and creates being retried every
// progressEvery, until the returned function is called.
func logProgress(d *driver, start time.Time) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				elapsed := time.Since(start)
				sent := d.sent.Load()
				log.Printf("t=%v: %d requests (%.0f/s), %d 5xx or no answer, %d creates being retried",
					elapsed.Round(time.Second), sent, float64(sent)/elapsed.Seconds(), d.failed.Load(), d.retrying.Load())
			}
		}
	}()
	return func() { close(done); <-finished }
}
