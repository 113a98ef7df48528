package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// maxLogGroups is how many kinds of log line the summary lists.
const maxLogGroups = 10

// kinds is the order of the summary's rows.
var kinds = []string{kindList, kindCreate, kindGet, kindReplay}

// printSummary writes the run's totals, timeline, memory and checks.
func printSummary(w io.Writer, o options, res *runResult, checks []check) {
	total, inLoad := res.rec.total(""), res.rec.inLoad
	fmt.Fprintf(w, "\n== petstore soak: %v, %d workers, %s ==\n", o.duration, o.workers, restartPlan(o))
	fmt.Fprintf(w, "%d requests in the %v load: %.0f req/s; %d more in the %v after it (unacknowledged creates retried)\n\n",
		inLoad, o.duration, float64(inLoad)/o.duration.Seconds(), total-inLoad, res.end.Sub(res.start.Add(o.duration)).Round(100*time.Millisecond))
	printRequests(w, res.rec)
	fmt.Fprintln(w)
	printTimeline(w, o, res)
	printLog(w, res.logs, res.logErr)
	fmt.Fprintln(w)
	printChecks(w, checks)
}

// restartPlan describes the planned restart.
func restartPlan(o options) string {
	if !o.restart {
		return "no database restart"
	}
	return fmt.Sprintf("MariaDB restart at %.0f%% (outage %v, grace %v)", restartAt*100, o.outage, o.grace)
}

// printRequests writes the table of requests by kind and status, with latencies.
func printRequests(w io.Writer, rec *recorder) {
	statuses := map[string]int{}
	for _, byStatus := range rec.counts {
		maps.Copy(statuses, byStatus)
	}
	cols := slices.Sorted(maps.Keys(statuses)) // 3-digit codes first, then timeout and neterr
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "KIND\tREQUESTS\t%s\tP50\tP99\tMAX\t\n", strings.Join(cols, "\t"))
	for _, kind := range append(slices.Clone(kinds), "") {
		if rec.total(kind) == 0 {
			continue
		}
		printRow(tw, rec, kind, cols)
	}
	_ = tw.Flush()
}

// printRow writes one kind's row ("" for every kind).
func printRow(tw io.Writer, rec *recorder, kind string, cols []string) {
	name := kind
	if kind == "" {
		name = "all"
	}
	fmt.Fprintf(tw, "%s\t%d\t", name, rec.total(kind))
	for _, status := range cols {
		n := 0
		for k, byStatus := range rec.counts {
			if kind == "" || k == kind {
				n += byStatus[status]
			}
		}
		fmt.Fprintf(tw, "%d\t", n)
	}
	l := rec.latencies(kind)
	fmt.Fprintf(tw, "%s\t%s\t%s\t\n", ms(percentile(l, 0.5)), ms(percentile(l, 0.99)), ms(percentile(l, 1)))
}

// printTimeline writes the restart, memory and retry figures.
func printTimeline(w io.Writer, o options, res *runResult) {
	at := func(t time.Time) string { return "+" + t.Sub(res.start).Round(100*time.Millisecond).String() }
	if r := res.restart; r != nil && !r.stopAt.IsZero() {
		from, to := r.window(o.grace, res.end)
		fmt.Fprintf(w, "restart: MariaDB stopped %s, exited %s, started %s, answering %s, service ready %s; window %s .. %s\n",
			at(r.stopAt), orDash(r.exitedAt, at), orDash(r.startAt, at), orDash(r.answeringAt, at), orDash(r.readyAt, at), at(from), at(to))
		if inside, _ := split(res.rec.failures, from, to); len(inside) > 0 {
			fmt.Fprintf(w, "         failures inside the window from %s to %s\n", at(firstStart(inside)), at(lastEnd(inside)))
		}
	}
	if len(res.rss) > 0 {
		ref, _ := afterWarmup(res.rss, res.start.Add(o.warmup))
		fmt.Fprintf(w, "memory (VmRSS every %v): start %s, after warm-up (%s) %s, end %s, peak %s (%s)\n", rssEvery,
			mib(res.rss[0].kib), at(ref.at), mib(ref.kib), mib(res.rss[len(res.rss)-1].kib), mib(peak(res.rss).kib), at(peak(res.rss).at))
	}
	printCreates(w, res.posts)
}

// printCreates writes how many creates needed retries, and how many were held off by 409.
func printCreates(w io.Writer, posts []*post) {
	var acked, retried, mostAttempts, inUse, replayed int
	var longest, longestInUse time.Duration
	for _, p := range posts {
		if p.id != 0 {
			acked++
		}
		if p.replayed {
			replayed++
		}
		if p.attempts > 1 {
			retried++
			mostAttempts = max(mostAttempts, p.attempts)
			longest = max(longest, p.took)
		}
		if p.inUse > 0 {
			inUse++
			longestInUse = max(longestInUse, p.took)
		}
	}
	fmt.Fprintf(w, "creates: %d sent, %d acknowledged (%d by a replay on retry); %d retried (at most %d attempts, longest %v from the first attempt to the 201 or give-up)\n",
		len(posts), acked, replayed, retried, mostAttempts, longest.Round(time.Millisecond))
	if inUse > 0 {
		fmt.Fprintf(w, "         %d of them answered 409 idempotency_key_in_use on retry, for up to %v\n", inUse, longestInUse.Round(time.Millisecond))
	}
}

// printLog writes the service's WARN and ERROR lines, grouped.
func printLog(w io.Writer, groups []logGroup, err error) {
	if err != nil {
		fmt.Fprintf(w, "service log: %v\n", err)
		return
	}
	if len(groups) == 0 {
		fmt.Fprintln(w, "service log: no WARN or ERROR line")
		return
	}
	fmt.Fprintln(w, "service log, WARN and ERROR lines:")
	for i, g := range groups {
		if i == maxLogGroups {
			fmt.Fprintf(w, "  and %d more kinds\n", len(groups)-i)
			break
		}
		err := ""
		if g.err != "" {
			err = fmt.Sprintf(": %.140s", g.err)
		}
		fmt.Fprintf(w, "  %6d %-5s %s%s\n", g.n, g.level, g.msg, err)
	}
}

// printChecks writes the verdict table and the overall result.
func printChecks(w io.Writer, checks []check) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.name, c.result, c.detail)
	}
	_ = tw.Flush()
	result := "PASS"
	if !allPass(checks) {
		result = "FAIL"
	}
	fmt.Fprintf(w, "RESULT: %s\n", result)
}

// orDash formats t with f, or "-" when t is zero.
func orDash(t time.Time, f func(time.Time) string) string {
	if t.IsZero() {
		return "-"
	}
	return f(t)
}

// firstStart returns the earliest start of events (not empty).
func firstStart(events []event) time.Time {
	t := events[0].start
	for _, e := range events {
		if e.start.Before(t) {
			t = e.start
		}
	}
	return t
}

// lastEnd returns the latest end of events (not empty).
func lastEnd(events []event) time.Time {
	t := events[0].end
	for _, e := range events {
		if e.end.After(t) {
			t = e.end
		}
	}
	return t
}

// ms formats d in milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}
