package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// maxRSSGrowth is how much the service's RSS may grow from the warm-up to the end.
const maxRSSGrowth = 1.5

// shutdownWait is how long the service may take to exit after SIGTERM: its default drain
// timeout (PETSTORE_SHUTDOWN_TIMEOUT, 20 s) and some.
const shutdownWait = 30 * time.Second

// check is one line of the summary's verdict.
type check struct {
	name   string
	result string // PASS, FAIL or SKIP
	detail string
}

// verdict returns a check that passes when ok.
func verdict(name string, ok bool, format string, args ...any) check {
	result := "FAIL"
	if ok {
		result = "PASS"
	}
	return check{name: name, result: result, detail: fmt.Sprintf(format, args...)}
}

// allPass reports whether no check failed.
func allPass(checks []check) bool {
	return !slices.ContainsFunc(checks, func(c check) bool { return c.result == "FAIL" })
}

// evaluate runs every check of the run: the service's answers first, then its shutdown,
// then the database's content once every write has ended.
func evaluate(ctx context.Context, env *environment, res *runResult) []check {
	from, to := restartWindow(env.opts, res)
	checks := []check{checkNo5xxOutside(res.rec.failures, from, to)}
	if res.restart != nil {
		checks = append(checks, check503Inside(res.rec.failures, from, to))
	}
	checks = append(checks, checkMemory(res.rss, res.rssErr, res.start.Add(env.opts.warmup)))
	checks = append(checks, checkSurvived(ctx, env.svc))
	stored, err := storedPets(ctx, env.db)
	if err != nil {
		checks = append(checks, verdict("(b) every created pet stored exactly once", false, "reading the pets: %v", err))
	} else {
		checks = append(checks, checkStoredOnce(res.posts, stored, res.rec.replays), checkNoDuplicates(res.posts, stored))
	}
	checks = append(checks, checkAnswers(res.rec), checkAcknowledged(res.posts, env.opts.settle), checkRestart(res.restart))
	slices.SortStableFunc(checks, func(a, b check) int { return strings.Compare(a.name, b.name) })
	return checks
}

// restartWindow returns the run's restart window, or zero times without a restart.
func restartWindow(o options, res *runResult) (from, to time.Time) {
	if res.restart == nil || res.restart.stopAt.IsZero() {
		return time.Time{}, time.Time{}
	}
	return res.restart.window(o.grace, res.end)
}

// checkNo5xxOutside: no 5xx, and no request without an answer, outside the restart window.
func checkNo5xxOutside(failures []event, from, to time.Time) check {
	inside, outside := split(failures, from, to)
	name := "(a) no 5xx outside the restart window"
	if from.IsZero() {
		return verdict(name, len(outside) == 0, "no restart window; 5xx and requests without an answer: %s", describe(byStatus(outside)))
	}
	return verdict(name, len(outside) == 0,
		"outside: %s; inside: %s", describe(byStatus(outside)), describe(byStatus(inside)))
}

// check503Inside: what failed inside the restart window failed as the contract says, 503
// unavailable (or without an answer while MariaDB went down).
func check503Inside(failures []event, from, to time.Time) check {
	inside, _ := split(failures, from, to)
	other := map[string]int{}
	for status, n := range byStatus(inside) {
		if status[0] == '5' && status != "503" {
			other[status] = n
		}
	}
	return verdict("(a2) 5xx inside the window are 503", len(other) == 0, "other 5xx: %s", describe(other))
}

// checkStoredOnce: every acknowledged pet is stored exactly once under the id it was
// acknowledged with (so retries and replays returned the original id).
func checkStoredOnce(posts []*post, stored map[string][]int64, replays int) check {
	var acked, onRetry int
	var bad []string
	for _, p := range posts {
		if p.id == 0 {
			continue
		}
		acked++
		if p.replayed {
			onRetry++
		}
		if ids := stored[p.name]; len(ids) != 1 || ids[0] != p.id {
			bad = append(bad, fmt.Sprintf("%s acknowledged as %d, stored as %v", p.name, p.id, ids))
		}
	}
	name := "(b) every created pet stored exactly once"
	if len(bad) > 0 {
		return verdict(name, false, "%d of %d acknowledged pets: %s", len(bad), acked, firstOf(bad))
	}
	return verdict(name, acked > 0, "%d acknowledged, each stored once under its id (%d acknowledged by a replay on retry); %d deliberate repeats replayed the original id",
		acked, onRetry, replays)
}

// checkNoDuplicates: no name is stored twice and every row is one of the run's creates, so
// that the rows are the distinct names.
func checkNoDuplicates(posts []*post, stored map[string][]int64) check {
	sent := make(map[string]*post, len(posts))
	for _, p := range posts {
		sent[p.name] = p
	}
	var rows, unacked int
	var bad []string
	for name, ids := range stored {
		rows += len(ids)
		p, ok := sent[name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%q was never sent (ids %v)", name, ids))
		case len(ids) > 1:
			bad = append(bad, fmt.Sprintf("%q stored %d times (ids %v)", name, len(ids), ids))
		case p.id == 0:
			unacked++
		}
	}
	return verdict("(c) no unacknowledged duplicates", len(bad) == 0 && rows == len(stored),
		"%d rows, %d distinct names; %d stored but never acknowledged%s", rows, len(stored), unacked, problems(bad))
}

// checkMemory: the service's RSS at the end is at most maxRSSGrowth times its RSS after the
// warm-up.
func checkMemory(samples []rssSample, err error, warmup time.Time) check {
	name := "(d) memory flat after warm-up"
	if err != nil {
		return verdict(name, false, "reading VmRSS: %v", err)
	}
	ref, ok := afterWarmup(samples, warmup)
	if !ok || len(samples) == 0 {
		return verdict(name, false, "no sample after the warm-up")
	}
	end := samples[len(samples)-1]
	ratio := float64(end.kib) / float64(ref.kib)
	return verdict(name, ratio <= maxRSSGrowth, "warm-up %s, end %s: %.2fx (limit %.1fx); peak %s",
		mib(ref.kib), mib(end.kib), ratio, maxRSSGrowth, mib(peak(samples).kib))
}

// checkSurvived: the service still answers /healthz and /readyz with 200, then exits with
// status 0 within shutdownWait of SIGTERM.
func checkSurvived(ctx context.Context, svc *service) check {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	health, herr := getStatus(ctx, client, svc.base+"/healthz")
	ready, rerr := getStatus(ctx, client, svc.base+"/readyz")
	took, err := svc.terminate(shutdownWait)
	exit := "exit 0"
	if err != nil {
		exit = err.Error()
	}
	return verdict("(e) service survived, exits cleanly on SIGTERM", health == 200 && ready == 200 && err == nil,
		"/healthz %s, /readyz %s; SIGTERM: %s after %v", answer(health, herr), answer(ready, rerr), exit, took.Round(time.Millisecond))
}

// checkAnswers: every answer was one the run expects (200 to reads, 201 to creates and
// their replays, or a retryable failure) and agrees with what the run knows.
func checkAnswers(rec *recorder) check {
	return verdict("(f) no unexpected answers", rec.odd == 0, "%d%s", rec.odd, problems(rec.examples))
}

// checkAcknowledged: every create was eventually acknowledged with 201.
func checkAcknowledged(posts []*post, settle time.Duration) check {
	var open []string
	for _, p := range posts {
		if p.id == 0 {
			open = append(open, fmt.Sprintf("%s after %d attempts", p.key, p.attempts))
		}
	}
	return verdict("(g) every create acknowledged", len(open) == 0,
		"%d of %d unacknowledged %v after the load%s", len(open), len(posts), settle, problems(open))
}

// checkRestart: the database restart happened.
func checkRestart(r *restartReport) check {
	name := "(r) MariaDB restarted mid-run"
	switch {
	case r == nil:
		return check{name: name, result: "SKIP", detail: "-restart=false"}
	case r.err != nil:
		return verdict(name, false, "%v", r.err)
	}
	return verdict(name, true, "down %v (mariadbd exit %v), answering %v after start, service ready %v later",
		r.answeringAt.Sub(r.stopAt).Round(time.Millisecond), r.exitedAt.Sub(r.stopAt).Round(time.Millisecond),
		r.answeringAt.Sub(r.startAt).Round(time.Millisecond), r.readyAt.Sub(r.answeringAt).Round(time.Millisecond))
}

// describe formats counts by status: "503 x12, timeout x1", or "none".
func describe(counts map[string]int) string {
	if len(counts) == 0 {
		return "none"
	}
	var parts []string
	for _, status := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s x%d", status, counts[status]))
	}
	return strings.Join(parts, ", ")
}

// problems formats the first examples of a list of problems, or nothing.
func problems(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return "; e.g. " + firstOf(list)
}

// firstOf joins the first maxExamples items of list.
func firstOf(list []string) string {
	if len(list) > maxExamples {
		return strings.Join(list[:maxExamples], "; ") + fmt.Sprintf("; and %d more", len(list)-maxExamples)
	}
	return strings.Join(list, "; ")
}

// answer formats a status, or the error that stopped it.
func answer(code int, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(code)
}
