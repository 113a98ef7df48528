package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"

	"petstore/perf/bench/internal/loadgen"
)

// cellStats are the medians across rounds of one row against one server.
type cellStats struct {
	rps, p50, p99 float64 // requests/s; microseconds
	cpu, driver   float64 // CPU time per request of the server and of the driver, microseconds
	delivered     float64 // webhook deliveries received per second, with an endpoint
	tail          float64 // seconds from the end of the load to the last delivery
	ok            bool
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

// newReport takes the medians of the rounds and computes the ratios and their targets.
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
		rps:       pick(func(s loadgen.Summary) float64 { return s.RPS }),
		p50:       pick(func(s loadgen.Summary) float64 { return s.P50us }),
		p99:       pick(func(s loadgen.Summary) float64 { return s.P99us }),
		cpu:       pick(func(s loadgen.Summary) float64 { return s.CPUusReq }),
		driver:    pick(func(s loadgen.Summary) float64 { return s.DriverCPUusReq }),
		delivered: pick(func(s loadgen.Summary) float64 { return s.DeliveredPS }),
		tail:      pick(func(s loadgen.Summary) float64 { return s.DeliveryTailS }),
		ok:        len(runs) > 0,
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
	if !m.ok || len(rep.plan) == 0 {
		return
	}
	fmt.Fprintf(w, "CPU during the rounds: bench (driver, servers, MariaDB, Redis) %.0f%%, other processes %.0f%% of all cores",
		100*m.ours, 100*m.others)
	if m.others > 0.10 {
		fmt.Fprint(w, ": WARNING, other work shared the machine; ratios are noisy, run again on a quiet machine")
	}
	fmt.Fprintln(w)
}

// writeCells prints one line per cell, the row's label on its first (the label column as wide
// as the longest), then what the columns are.
func (rep *report) writeCells(w io.Writer) {
	labelWidth := len("workload")
	for _, r := range rep.plan {
		labelWidth = max(labelWidth, utf8.RuneCountInString(r.label))
	}
	fmt.Fprintf(w, "%-*s  %-9s  %8s %7s %7s %8s %8s\n", labelWidth, "workload", "server", "req/s", "p50", "p99", "cpu/req", "driver")
	for _, r := range rep.plan {
		label := r.label
		for _, s := range r.servers {
			st := rep.cell(r.id, s.column)
			fmt.Fprintf(w, "%-*s  %-9s  ", labelWidth, label, s.column)
			label = ""
			if !st.ok {
				fmt.Fprintln(w, "       -")
				continue
			}
			fmt.Fprintf(w, "%8s %7s %7s %8s %8s\n", count(int(st.rps+0.5)), loadgen.FormatMicros(st.p50),
				loadgen.FormatMicros(st.p99), loadgen.FormatMicros(st.cpu), loadgen.FormatMicros(st.driver))
			if s.hook != nil {
				fmt.Fprintf(w, "%-*s  %-9s  %8s deliveries/s, the last %.2f s after the load\n", labelWidth, "", "receiver",
					count(int(st.delivered+0.5)), st.tail)
			}
		}
	}
	fmt.Fprintln(w, "\nservice: as shipped, page cache on; cache-off: the same with PETSTORE_PAGE_CACHE=off;")
	fmt.Fprintln(w, "direct: Gin + GORM, tuned; raw: net/http + database/sql. cpu/req: the server process's")
	fmt.Fprintln(w, "CPU time per answered request; driver: the load generator's own, in this process.")
	fmt.Fprintln(w, "With a webhook endpoint, cpu/req is read once every pet of the run was delivered; the")
	fmt.Fprintln(w, "receiver answers 204 in this process, its CPU time in driver's.")
}

// count writes n with thousands separators: 10,000.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
