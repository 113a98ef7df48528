package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"petstore/perf/bench/internal/loadgen"
)

// results are what the rounds measured.
type results struct {
	cells    map[string]map[string][]loadgen.Summary // row id -> column -> one per round
	warm     []loadgen.Summary                       // the warm-up runs, for their errors only
	rss      *loadgen.Summary                        // the mixed load before the memory reading
	rssBytes int64
	rssPeak  int64
	rssCache float64    // what the page cache held then, bytes as it weighs them
	machine  machineUse // how the machine's CPU was shared during the rounds
}

// measure warms every cell up, runs the rounds, then the mixed load and memory reading.
func (b *bench) measure(ctx context.Context) (*results, error) {
	res := &results{cells: map[string]map[string][]loadgen.Summary{}}
	var pids []int
	for _, s := range b.servers {
		pids = append(pids, s.cmd.Process.Pid)
	}
	var before cpuSample
	for round := 0; round <= b.cfg.rounds; round++ {
		if round == 1 {
			before = sampleCPU(pids)
		}
		d := b.cfg.round
		if round == 0 {
			if d = b.cfg.warmup; d <= 0 {
				continue
			}
		}
		for _, r := range b.plan {
			for _, s := range r.servers {
				if round > 0 && b.cfg.settle > 0 {
					// A server left idle since its last cell (minutes, for some) has closed its
					// idle database connections and returned memory: bring it back to the
					// steady state the others are measured in.
					warm, err := b.settleCell(ctx, r, s, round)
					res.warm = append(res.warm, warm)
					if err != nil {
						return nil, err
					}
				}
				sum, err := b.runCell(ctx, r, s, round, d)
				if err != nil {
					return nil, err
				}
				if round == 0 {
					res.warm = append(res.warm, sum)
					continue
				}
				if res.cells[r.id] == nil {
					res.cells[r.id] = map[string][]loadgen.Summary{}
				}
				res.cells[r.id][s.column] = append(res.cells[r.id][s.column], sum)
			}
		}
	}
	res.machine = useBetween(before, sampleCPU(pids))
	return res, b.measureMemory(ctx, res)
}

// measureMemory fills the service's page cache, runs the mixed load against it for
// cfg.rssFor, then reads its RSS and what its cache holds.
func (b *bench) measureMemory(ctx context.Context, res *results) error {
	if b.rss == nil || !b.wants(rowRSS) {
		return nil
	}
	if err := b.fillPageCache(ctx, b.rss); err != nil {
		return err
	}
	r := &row{id: rowRSS, label: "mixed load", workload: loadgen.Mix}
	sum, err := b.runCell(ctx, r, b.rss, 1, b.cfg.rssFor)
	if err != nil {
		return err
	}
	res.rss = &sum
	if res.rssBytes, res.rssPeak, err = b.rss.memory(); err != nil {
		return err
	}
	res.rssCache, err = b.rss.pageCacheBytes(ctx)
	return err
}

// fillPageCache walks the listing of s, 100 pages at a time with page sizes from 100 down to
// 20, until its page cache is full (100 pages grow it by less than 1%: it evicts as much as it
// keeps) or every size was walked: the memory row measures the service with its cache as full
// as its setting lets a long-running instance's grow, not the few pages the mixed load reads.
func (b *bench) fillPageCache(ctx context.Context, s *server) error {
	const chunk = 100
	p := loadgen.Params{Host: s.addr, Key: s.data.key}
	var before float64
	for limit := 100; limit >= 20; limit-- {
		for path := "/v1/pets?limit=" + strconv.Itoa(limit); path != ""; {
			next, read, err := loadgen.Walk(ctx, s.addr, p, path, chunk)
			if err != nil {
				return fmt.Errorf("filling the page cache: %w", err)
			}
			held, err := s.pageCacheBytes(ctx)
			if err != nil || (read == chunk && held < 1.01*before) {
				return err
			}
			path, before = next, held
		}
	}
	return nil
}

// settleCell runs row r's workload against s for cfg.settle, unmeasured and unlogged; its
// summary is kept for its errors only. Its requests are built as those of round -round, so
// that the names it POSTs are its own.
func (b *bench) settleCell(ctx context.Context, r *row, s *server, round int) (loadgen.Summary, error) {
	res, err := loadgen.Run(ctx, loadgen.Options{Addr: s.addr, Conns: b.cfg.conns, Duration: b.cfg.settle, Build: b.builder(r, s, -round)})
	if err != nil {
		return loadgen.Summary{}, err
	}
	sum := res.Summarize(r.workload, b.cfg.conns)
	sum.Label, sum.Server, sum.Round = r.id+" (settle)", s.name, round
	if s.hook != nil {
		// Its pets' deliveries must not fall into the measured run.
		if _, err := s.hook.drain(ctx, res.Statuses[http.StatusCreated]); err != nil {
			return sum, err
		}
	}
	return sum, ctx.Err()
}

// runCell runs row r's workload against s for d and returns its summary, with the server's CPU
// time per answered request beside the driver's own (loadgen.Summary.DriverCPUusReq). On a
// server with a webhook endpoint the server's CPU time is read once every pet the run created
// was delivered: it includes their deliveries.
func (b *bench) runCell(ctx context.Context, r *row, s *server, round int, d time.Duration) (loadgen.Summary, error) {
	cpu0 := s.cpuTime()
	var got int64
	if s.hook != nil {
		got = s.hook.got.Load()
	}
	res, err := loadgen.Run(ctx, loadgen.Options{Addr: s.addr, Conns: b.cfg.conns, Duration: d, Build: b.builder(r, s, round)})
	if err != nil {
		return loadgen.Summary{}, err
	}
	sum := res.Summarize(r.workload, b.cfg.conns)
	sum.Label, sum.Server, sum.Round = r.id, s.name, round
	if s.hook != nil {
		if err := s.hook.deliver(ctx, res, got, &sum); err != nil {
			return sum, err
		}
	}
	cpu := s.cpuTime() - cpu0
	if answered := sum.Requests - sum.NetErrors; answered > 0 {
		sum.CPUusReq = float64(cpu.Microseconds()) / float64(answered)
	}
	if b.out != nil {
		if err := sum.WriteLine(b.out); err != nil {
			return sum, err
		}
	}
	b.logf("round %d/%d %-12s %-22s %8.0f req/s  p50 %-7s p99 %-7s cpu/req %-6s driver %-6s %s", round, b.cfg.rounds, r.id, s.name,
		sum.RPS, loadgen.FormatMicros(sum.P50us), loadgen.FormatMicros(sum.P99us), loadgen.FormatMicros(sum.CPUusReq),
		loadgen.FormatMicros(sum.DriverCPUusReq), sum.StatusList())
	if s.hook != nil {
		b.logf("round %d/%d %-12s %-22s %8.0f deliveries/s, the last %.2f s after the load", round, b.cfg.rounds, r.id, "receiver",
			sum.DeliveredPS, sum.DeliveryTailS)
	}
	return sum, ctx.Err()
}
