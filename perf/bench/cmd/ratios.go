package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"petstore/perf/bench/internal/loadgen"
)

// ratio is one line of the ratio table: a measured figure and its target, if it has one.
type ratio struct {
	name   string
	value  float64
	text   string // the value as shown
	target string // such as ">= 1.15"; "" for a figure with no target
	pass   bool
	ok     bool // both sides were measured
}

// addRatios computes the ratios with a target (issues 6, 15, 29 and 39), then figures without
// one: the cache's gain, latencies, CPU time per request beside the peers' and the driver's.
func (rep *report) addRatios(res *results) {
	svc := func(id string) cellKey { return cellKey{id, colService} }
	off := func(id string) cellKey { return cellKey{id, colCacheOff} }
	rps := func(s loadgen.Summary) float64 { return s.RPS }
	p50 := func(s loadgen.Summary) float64 { return s.P50us }
	p99 := func(s loadgen.Summary) float64 { return s.P99us }
	cpu := func(s loadgen.Summary) float64 { return s.CPUusReq }
	list, listOff, post := svc(rowList), off(rowList), svc(rowPost)
	listDirect, listRaw := cellKey{rowList, colDirect}, cellKey{rowList, colRaw}
	postDirect, postRaw := cellKey{rowPost, colDirect}, cellKey{rowPost, colRaw}
	far, first := fmt.Sprintf("page %s / page 1", count(rep.cfg.farPage())), fmt.Sprintf("%s rows", count(rep.cfg.pageRows))

	rep.add("REST list: service / raw (req/s)", list, listRaw, rps, ">=", 1.50)
	rep.add("REST list, cache off: service / raw (req/s)", listOff, listRaw, rps, ">=", 0.85)
	rep.add("REST list, cache off: service / direct (req/s)", listOff, listDirect, rps, ">=", 1.25)
	rep.add("GraphQL list: service / raw's REST list (req/s)", svc(rowGraphQL), listRaw, rps, ">=", 1.00)
	rep.add("POST: service / raw (req/s)", post, postRaw, rps, ">=", 0.90)
	rep.add("POST: service / direct (req/s)", post, postDirect, rps, ">=", 1.05)
	rep.add("POST, webhooks delivered elsewhere / none (CPU per request)", svc(rowPostWorker), post, cpu, "<=", 1.10)
	rep.addMemory(res)
	rep.add(fmt.Sprintf("%s p50 latency, cache off, %s", far, first), off(rowPageFar), off(rowPageFirst), p50, "<=", 1.2)
	rep.add("Redis limiter / in-process limiter, cache off (req/s)", off(rowListRedis), listOff, rps, ">=", 0.90)
	rep.addSamePage(svc, off, cpu)

	rep.add("REST list: cache on / cache off (req/s)", list, listOff, rps, "", 0)
	rep.add("GraphQL list: cache on / cache off (req/s)", svc(rowGraphQL), off(rowGraphQL), rps, "", 0)
	rep.add("Redis limiter / in-process limiter, cache on (req/s)", svc(rowListRedis), list, rps, "", 0)
	rep.add("GraphQL / REST list, same service (req/s)", svc(rowGraphQL), list, rps, "", 0)
	rep.add("POST, one webhook endpoint / none (req/s)", svc(rowPostHook), post, rps, "", 0)
	rep.add("POST, webhooks delivered here / none (CPU per request)", svc(rowPostHook), post, cpu, "", 0)
	rep.add(fmt.Sprintf("%s p50 latency, cache on, %s", far, first), svc(rowPageFar), svc(rowPageFirst), p50, "", 0)
	rep.addPair("REST list: service / raw (p50 / p99 latency)", list, listRaw, p50, listRaw, p99)
	rep.addPair("POST: service / raw (p50 / p99 latency)", post, postRaw, p50, postRaw, p99)
	rep.addPair("REST list: service CPU per request / direct's / raw's", list, listDirect, cpu, listRaw, cpu)
	rep.addPair("REST list, cache off: CPU per request / direct's / raw's", listOff, listDirect, cpu, listRaw, cpu)
	rep.addPair("POST: service CPU per request / direct's / raw's", post, postDirect, cpu, postRaw, cpu)
	rep.add("GraphQL / REST list (service CPU per request)", svc(rowGraphQL), list, cpu, "", 0)
	sqlite, sqliteOff := svc(rowListSQLite), off(rowListSQLite)
	sqliteDirect, sqliteRaw := cellKey{rowListSQLite, colDirect}, cellKey{rowListSQLite, colRaw}
	rep.addPair("SQLite REST list: service / direct / raw (req/s)", sqlite, sqliteDirect, rps, sqliteRaw, rps)
	rep.addPair("SQLite REST list, cache off: service / direct / raw (req/s)", sqliteOff, sqliteDirect, rps, sqliteRaw, rps)
	rep.addDriver()
}

// addSamePage adds GraphQL's CPU time per request beside REST's for the same page, pets(limit:20)
// beside ?limit=20 and petsConnection(first:100) beside ?limit=100, with the page cache on and
// off (issue 36): each within 1.25 times.
func (rep *report) addSamePage(svc, off func(string) cellKey, cpu func(loadgen.Summary) float64) {
	for _, p := range []struct{ name, gql, rest string }{
		{"pets(limit:20) / ?limit=20", rowGraphQL, rowList},
		{"petsConnection(first:100) / ?limit=100", rowGQLConn, rowList100},
	} {
		rep.add("GraphQL "+p.name+", CPU per request, cache on", svc(p.gql), svc(p.rest), cpu, "<=", 1.25)
		rep.add("GraphQL "+p.name+", CPU per request, cache off", off(p.gql), off(p.rest), cpu, "<=", 1.25)
	}
}

// addMemory adds the service's resident memory after the mixed load, its page cache filled.
func (rep *report) addMemory(res *results) {
	if res.rss == nil {
		return
	}
	mib := float64(res.rssBytes) / (1 << 20)
	rep.push(ratio{name: fmt.Sprintf("service RSS after %s mixed load, cache %.1f MiB, peak %.1f MiB",
		rep.cfg.rssFor, res.rssCache/(1<<20), float64(res.rssPeak)/(1<<20)),
		value: mib, text: fmt.Sprintf("%.1f MiB", mib), target: "<= 64 MiB", pass: mib <= 64, ok: true})
}

// addDriver adds the driver's CPU time per request over the server's, the median and the
// largest over the cells: well under 1 says that the load generator is not what the machine's
// cores were busy with.
func (rep *report) addDriver() {
	var shares []float64
	for _, r := range rep.plan {
		for _, s := range r.servers {
			if st := rep.cell(r.id, s.column); st.ok && st.cpu > 0 {
				shares = append(shares, st.driver/st.cpu)
			}
		}
	}
	r := ratio{name: "driver CPU per request / server's (median, max of the cells)", ok: len(shares) > 0}
	if r.ok {
		r.text = fmt.Sprintf("%.2f, %.2f", median(shares), slices.Max(shares))
	}
	rep.push(r)
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

// writeRatios prints each ratio with its target and whether it was met.
func (rep *report) writeRatios(w io.Writer) {
	fmt.Fprintf(w, "%-64s %12s %10s  %s\n", "ratio (median of the rounds' ratios)", "measured", "target", "result")
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
		fmt.Fprintf(w, "%-64s %12s %10s  %s\n", r.name, text, target, result)
	}
}
