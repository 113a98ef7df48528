package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// maxExamples is how many unexpected answers the summary describes.
const maxExamples = 5

// event is a request that failed: a 5xx or no answer.
type event struct {
	kind       string
	status     string
	start, end time.Time
}

// recorder collects one worker's requests (and, merged, the run's).
type recorder struct {
	counts   map[string]map[string]int // kind -> status -> requests
	latency  map[string][]time.Duration
	failures []event
	odd      int      // answers that break the contract or the run's expectations
	examples []string // the first few of them, described
	replays  int      // deliberate repeats answered with the original id
	loadEnd  time.Time
	inLoad   int // requests started before loadEnd
}

// newRecorder returns an empty recorder of a load that ends at loadEnd.
func newRecorder(loadEnd time.Time) *recorder {
	return &recorder{counts: map[string]map[string]int{}, latency: map[string][]time.Duration{}, loadEnd: loadEnd}
}

// add records one request.
func (r *recorder) add(kind, status string, start, end time.Time) {
	if r.counts[kind] == nil {
		r.counts[kind] = map[string]int{}
	}
	r.counts[kind][status]++
	r.latency[kind] = append(r.latency[kind], end.Sub(start))
	if start.Before(r.loadEnd) {
		r.inLoad++
	}
	if failure(status) {
		r.failures = append(r.failures, event{kind: kind, status: status, start: start, end: end})
	}
}

// unexpected records an answer whose status the run did not expect of kind.
func (r *recorder) unexpected(kind string, o outcome) {
	body := o.body
	if len(body) > 200 {
		body = body[:200]
	}
	r.mismatch(fmt.Sprintf("%s answered %s %s", kind, o.status, body))
}

// mismatch records an answer that contradicts what the run knows.
func (r *recorder) mismatch(what string) {
	r.odd++
	if len(r.examples) < maxExamples {
		r.examples = append(r.examples, what)
	}
}

// merge adds o's records to r.
func (r *recorder) merge(o *recorder) {
	for kind, byStatus := range o.counts {
		if r.counts[kind] == nil {
			r.counts[kind] = map[string]int{}
		}
		for status, n := range byStatus {
			r.counts[kind][status] += n
		}
	}
	for kind, l := range o.latency {
		r.latency[kind] = append(r.latency[kind], l...)
	}
	r.failures = append(r.failures, o.failures...)
	r.odd += o.odd
	for _, e := range o.examples {
		if len(r.examples) < maxExamples {
			r.examples = append(r.examples, e)
		}
	}
	r.replays += o.replays
	r.inLoad += o.inLoad
}

// total returns the number of requests of kind ("" for every kind).
func (r *recorder) total(kind string) int {
	n := 0
	for k, byStatus := range r.counts {
		if kind == "" || k == kind {
			for _, c := range byStatus {
				n += c
			}
		}
	}
	return n
}

// latencies returns the sorted latencies of kind ("" for every kind).
func (r *recorder) latencies(kind string) []time.Duration {
	var all []time.Duration
	for k, l := range r.latency {
		if kind == "" || k == kind {
			all = append(all, l...)
		}
	}
	slices.Sort(all)
	return all
}

// percentile returns the nearest-rank p-quantile (0 < p <= 1) of sorted, or 0 when empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// split divides failures into those that overlap [from, to] and the others.
func split(failures []event, from, to time.Time) (inside, outside []event) {
	for _, e := range failures {
		if !from.IsZero() && !e.start.After(to) && !e.end.Before(from) {
			inside = append(inside, e)
		} else {
			outside = append(outside, e)
		}
	}
	return inside, outside
}

// byStatus counts events by status.
func byStatus(events []event) map[string]int {
	m := map[string]int{}
	for _, e := range events {
		m[e.status]++
	}
	return m
}
