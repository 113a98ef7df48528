package conns

import (
	"time"

	"petstore/live"
)

// ReasonShutdown is the close reason when the instance shuts down.
const ReasonShutdown = "the instance is shutting down: reconnect and resume with after"

// Shutdown closes every connection with live.CloseGoingAway (an SSE stream ends after an error
// event saying so, which it waits for, at most WriteTimeout), lets every lease in Redis go
// and refuses new connections; the Hub's goroutines and the Registry's stop.
func (r *Registry) Shutdown() {
	leasing, conns := r.beginShutdown()
	for _, c := range conns {
		c.Cut(live.CloseGoingAway, ReasonShutdown)
	}
	r.waitStreams()
	r.stop()
	r.stopLeasing(leasing)
	r.hub.Close()
}

// beginShutdown refuses new connections, and returns what Shutdown ends: the leasing (nil
// when it never started) and every connection.
func (r *Registry) beginShutdown() (chan struct{}, []*Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shutdown = true
	var all []*Conn
	for _, k := range r.keys {
		all = append(all, k.list()...)
	}
	return r.leasing, all
}

// TrackStream counts an SSE stream being served, which Shutdown waits for (StreamDone ends
// it), unless shutdown has begun: then it reports false.
func (r *Registry) TrackStream() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shutdown {
		return false
	}
	r.streams.Add(1)
	return true
}

// StreamDone ends a stream that TrackStream counted.
func (r *Registry) StreamDone() { r.streams.Done() }

// waitStreams waits, at most WriteTimeout, for the SSE streams to write their last events:
// net/http does not wait for connections taken from it.
func (r *Registry) waitStreams() {
	ended := make(chan struct{})
	go func() { r.streams.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(r.opts.WriteTimeout):
	}
}
