package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"petstore/perf/bench/internal/loadgen"
)

// cellStats are the medians across rounds of one row against one server.
type cellStats struct {
	rps, p50, p99, cpu float64 // requests/s; microseconds
	ok                 bool
}

// ratio is one line of the ratio table: a measured figure and its target, if it has one.
type ratio struct {
	name   string
	value  float64
	text   string // the value as shown
	target string // such as ">= 1.15"; "" for a figure with no target
	pass   bool
	ok     bool // both sides were measured
}

// report is the table of a run.
type report struct {
	cfg      config
	machine  machineUse
	plan     []*row
	stats    map[string]map[string]cellStats         // row id -> column -> medians
	runs     map[string]map[string][]loadgen.Summary // row id -> column -> one per round
	ratios   []ratio
	failures []string // cells with failed requests
	errors   int
	missed   int // targets missed
}

// newReport takes the medians of the rounds and computes the ratios of issues 6 and 15.
func newReport(cfg config, plan []*row, res *results) *report {
	rep := &report{cfg: cfg, plan: plan, machine: res.machine, stats: map[string]map[string]cellStats{}, runs: res.cells}
	for id, cols := range res.cells {
		rep.stats[id] = map[string]cellStats{}
		for col, runs := range cols {
			rep.stats[id][col] = medians(runs)
			rep.noteErrors(runs)
		}
	}
	rep.noteErrors(res.warm)
	if res.rss != nil {
		rep.noteErrors([]loadgen.Summary{*res.rss})
	}
	rep.addRatios(res)
	return rep
}

// medians returns the medians of runs.
func medians(runs []loadgen.Summary) cellStats {
	pick := func(f func(loadgen.Summary) float64) float64 {
		var v []float64
		for _, r := range runs {
			v = append(v, f(r))
		}
		return median(v)
	}
	return cellStats{
		rps: pick(func(s loadgen.Summary) float64 { return s.RPS }),
		p50: pick(func(s loadgen.Summary) float64 { return s.P50us }),
		p99: pick(func(s loadgen.Summary) float64 { return s.P99us }),
		cpu: pick(func(s loadgen.Summary) float64 { return s.CPUusReq }),
		ok:  len(runs) > 0,
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// noteErrors records every run that had failed requests.
func (rep *report) noteErrors(runs []loadgen.Summary) {
	for _, s := range runs {
		if s.Errors > 0 {
			rep.errors += s.Errors
			rep.failures = append(rep.failures, fmt.Sprintf("%s on %s round %d: %s", s.Label, s.Server, s.Round, s.StatusList()))
		}
	}
}

func (rep *report) errorCount() int { return rep.errors }

func (rep *report) cell(id, col string) cellStats { return rep.stats[id][col] }

// addRatios computes the targets of issues 6 and 15, and figures without one: the latencies
// and the service's CPU time per request beside the comparison servers'.
func (rep *report) addRatios(res *results) {
	svc := func(id string) cellKey { return cellKey{id, colService} }
	rps := func(s loadgen.Summary) float64 { return s.RPS }
	p50 := func(s loadgen.Summary) float64 { return s.P50us }
	p99 := func(s loadgen.Summary) float64 { return s.P99us }
	cpu := func(s loadgen.Summary) float64 { return s.CPUusReq }
	list, post := svc(rowList), svc(rowPost)
	listDirect, listRaw := cellKey{rowList, colDirect}, cellKey{rowList, colRaw}
	postDirect, postRaw := cellKey{rowPost, colDirect}, cellKey{rowPost, colRaw}
	rep.add("REST list: service / direct (req/s)", list, listDirect, rps, ">=", 1.25)
	rep.add("REST list: service / raw (req/s)", list, listRaw, rps, ">=", 0.85)
	rep.add("POST: service / direct (req/s)", post, postDirect, rps, ">=", 1.05)
	rep.add("POST: service / raw (req/s)", post, postRaw, rps, ">=", 0.90)
	rep.add("GraphQL / REST list, same service (req/s)", svc(rowGraphQL), list, rps, ">=", 0.80)
	rep.addPair("REST list: service / raw (p50 / p99 latency)", list, listRaw, p50, listRaw, p99)
	rep.addPair("POST: service / raw (p50 / p99 latency)", post, postRaw, p50, postRaw, p99)
	rep.addPair("REST list: service CPU per request / direct's / raw's", list, listDirect, cpu, listRaw, cpu)
	rep.addPair("POST: service CPU per request / direct's / raw's", post, postDirect, cpu, postRaw, cpu)
	rep.add("GraphQL / REST list (service CPU per request)", svc(rowGraphQL), list, cpu, "", 0)
	rep.add(fmt.Sprintf("page %s / page 1 p50 latency, %s rows", count(rep.cfg.farPage()), count(rep.cfg.pageRows)),
		svc(rowPageFar), svc(rowPageFirst), p50, "<=", 1.2)
	rep.add("Redis limiter / in-process limiter (req/s)", svc(rowListRedis), list, rps, ">=", 0.90)
	if res.rss != nil {
		mib := float64(res.rssBytes) / (1 << 20)
		r := ratio{name: fmt.Sprintf("service RSS after %s of mixed load (peak %.1f MiB)", rep.cfg.rssFor, float64(res.rssPeak)/(1<<20)),
			value: mib, text: fmt.Sprintf("%.1f MiB", mib), target: "<= 64 MiB", pass: mib <= 64, ok: true}
		rep.push(r)
	}
	rep.add("SQLite REST list: service / direct (req/s)", svc(rowListSQLite), cellKey{rowListSQLite, colDirect}, rps, "", 0)
	rep.add("SQLite REST list: service / raw (req/s)", svc(rowListSQLite), cellKey{rowListSQLite, colRaw}, rps, "", 0)
}

// addPair adds one line without a target that shows two ratios: cell a to cell b in figure f,
// then cell a to cell c in figure g ("-" for one not measured).
func (rep *report) addPair(name string, a, b cellKey, f func(loadgen.Summary) float64, c cellKey, g func(loadgen.Summary) float64) {
	r := ratio{name: name}
	var texts [2]string
	for i, q := range []struct {
		to  cellKey
		fig func(loadgen.Summary) float64
	}{{b, f}, {c, g}} {
		texts[i] = "-"
		if v, ok := rep.ratioOf(a, q.to, q.fig); ok {
			texts[i], r.ok = fmt.Sprintf("%.2f", v), true
		}
	}
	r.text = texts[0] + " / " + texts[1]
	rep.push(r)
}

// ratioOf returns the median of the rounds' own ratios of cell a to cell b in figure f, and
// whether any round measured both. The two cells of a pair run within seconds of each other
// in a round, so the drift of a shared machine between rounds cancels out of each ratio,
// where a ratio of medians taken from different rounds would keep it.
func (rep *report) ratioOf(a, b cellKey, f func(loadgen.Summary) float64) (float64, bool) {
	runsA, runsB := rep.runs[a.row][a.col], rep.runs[b.row][b.col]
	var ratios []float64
	for i := range min(len(runsA), len(runsB)) {
		if d := f(runsB[i]); d > 0 {
			ratios = append(ratios, f(runsA[i])/d)
		}
	}
	return median(ratios), len(ratios) > 0
}

// cellKey names one cell: a row against one server column.
type cellKey struct{ row, col string }

// add adds the ratio of cell a to cell b in figure f (ratioOf), with its target (op "" for
// none).
func (rep *report) add(name string, a, b cellKey, f func(loadgen.Summary) float64, op string, target float64) {
	r := ratio{name: name}
	r.value, r.ok = rep.ratioOf(a, b, f)
	if r.ok {
		r.text = fmt.Sprintf("%.2f", r.value)
	}
	if op != "" {
		r.target = op + " " + strconv.FormatFloat(target, 'f', 2, 64)
		r.pass = (op == ">=" && r.value >= target) || (op == "<=" && r.value <= target)
	}
	rep.push(r)
}

func (rep *report) push(r ratio) {
	if r.ok && r.target != "" && !r.pass {
		rep.missed++
	}
	rep.ratios = append(rep.ratios, r)
}

// write prints the table of workloads, then the ratios and the errors.
func (rep *report) write(w io.Writer) {
	c := rep.cfg
	fmt.Fprintf(w, "\npetstore bench: %d round(s) x %s per cell, %d connections, medians across rounds\n", c.rounds, c.round, c.conns)
	fmt.Fprintf(w, "MySQL and SQLite %s pets, paging %s pets; the driver, the servers and MariaDB share the machine's cores\n",
		count(c.rows), count(c.pageRows))
	rep.writeMachine(w)
	fmt.Fprintln(w)
	rep.writeCells(w)
	fmt.Fprintln(w)
	rep.writeRatios(w)
	if rep.errors == 0 {
		fmt.Fprintln(w, "\nerrors: none (every answer 2xx)")
		return
	}
	fmt.Fprintf(w, "\nerrors: %d\n", rep.errors)
	for _, f := range rep.failures {
		fmt.Fprintln(w, "  "+f)
	}
}

// writeMachine says how much of the machine other processes took during the rounds: more than
// a few percent means the figures are disturbed.
func (rep *report) writeMachine(w io.Writer) {
	m := rep.machine
	if !m.ok {
		return
	}
	fmt.Fprintf(w, "CPU during the rounds: bench (driver, servers, MariaDB, Redis) %.0f%%, other processes %.0f%% of all cores",
		100*m.ours, 100*m.others)
	if m.others > 0.10 {
		fmt.Fprint(w, ": WARNING, other work shared the machine; ratios are noisy, run again on a quiet machine")
	}
	fmt.Fprintln(w)
}

const labelWidth = 38

func (rep *report) writeCells(w io.Writer) {
	cols := []string{colService, colDirect, colRaw}
	fmt.Fprintf(w, "%-*s", labelWidth, "")
	for _, col := range cols {
		fmt.Fprintf(w, "  %-33s", centre(col, 33))
	}
	fmt.Fprintf(w, "\n%-*s", labelWidth, "workload")
	for range cols {
		fmt.Fprintf(w, "  %8s %7s %7s %8s", "req/s", "p50", "p99", "cpu/req")
	}
	fmt.Fprintln(w)
	for _, r := range rep.plan {
		fmt.Fprintf(w, "%-*s", labelWidth, r.label)
		for _, col := range cols {
			s := rep.cell(r.id, col)
			if !s.ok {
				fmt.Fprintf(w, "  %8s %7s %7s %8s", "-", "", "", "")
				continue
			}
			fmt.Fprintf(w, "  %8s %7s %7s %8s", count(int(s.rps+0.5)), loadgen.FormatMicros(s.p50),
				loadgen.FormatMicros(s.p99), loadgen.FormatMicros(s.cpu))
		}
		fmt.Fprintln(w)
	}
}

func (rep *report) writeRatios(w io.Writer) {
	fmt.Fprintf(w, "%-62s %12s %10s  %s\n", "ratio (median of the rounds' ratios)", "measured", "target", "result")
	for _, r := range rep.ratios {
		text, result := r.text, "info"
		switch {
		case !r.ok:
			text, result = "-", "not run"
		case r.target == "":
		case r.pass:
			result = "PASS"
		case rep.cfg.smoke:
			result = "FAIL (smoke: not enforced)"
		default:
			result = "FAIL"
		}
		target := r.target
		if target == "" {
			target = "-"
		}
		fmt.Fprintf(w, "%-62s %12s %10s  %s\n", r.name, text, target, result)
	}
}

// centre pads s with dashes to width, centred.
func centre(s string, width int) string {
	pad := max(width-len(s)-2, 0)
	return strings.Repeat("-", pad/2) + " " + s + " " + strings.Repeat("-", pad-pad/2)
}

// count writes n with thousands separators: 10,000.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
