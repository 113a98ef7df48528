// Command cmd is `make bench`: it builds the service and the two comparison servers (direct:
// Gin + GORM; raw: net/http + database/sql), seeds fresh databases, starts every server on
// loopback against the same data (the service twice: page cache on, as shipped, and off),
// drives them with the same workloads in interleaved rounds (A B C D A B C D), and prints one
// table of requests/s, p50, p99 and the CPU time per request of the server and of the driver
// (medians across rounds) with the ratios of issues 6, 15, 29 and 39 and their targets.
//
//	go run ./bench/cmd                 # the full bench: 5 rounds of 10 s per workload and server
//	go run ./bench/cmd -smoke          # CI: 1 round of 2 s, 1,000 rows; only errors fail it
//	go run ./bench/cmd -only list,post # some rows only
//
// Every setting is a flag; BENCH_SMOKE=1 is -smoke. The machine has 2 cores shared by the
// driver, the servers and MariaDB: read the ratios, not the absolute figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// config is every setting of a bench run.
type config struct {
	mysql     string        // the database of the MySQL rows, dropped and created anew
	redis     string        // the Redis of the shared-limiter row
	rounds    int           // interleaved rounds
	round     time.Duration // how long each workload runs against each server in a round
	warmup    time.Duration // one unmeasured run of each cell before the first round
	settle    time.Duration // unmeasured load on a cell's server just before each measured run
	conns     int           // connections of the load driver
	rows      int           // pets seeded in the MySQL and SQLite databases
	pageRows  int           // pets seeded for the paging rows
	pageLimit int           // page size of the paging rows; the far page is pageRows/pageLimit
	rssFor    time.Duration // how long the mixed load runs before the service's RSS is read
	smoke     bool          // short run for CI: targets are reported, not enforced
	only      string        // comma-separated row ids to run; empty: all
	out       string        // file to write every run's JSON line to
	keep      bool          // keep the work folder (binaries, databases, server logs)
}

// errTargets is returned when a target was missed in a full run.
var errTargets = errors.New("targets missed (see the table)")

// run parses the flags, runs the bench and prints its report.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	// The store's migration lines and such: warnings only.
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	b, err := newBench(cfg, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	if err := b.setUp(ctx); err != nil {
		return err
	}
	res, err := b.measure(ctx)
	if err != nil {
		return err
	}
	rep := newReport(cfg, b.plan, res)
	rep.write(stdout)
	switch {
	case len(rep.failures) > 0:
		b.keepWork = true
		return fmt.Errorf("%d request(s) failed: %s", rep.errorCount(), strings.Join(rep.failures, "; "))
	case rep.missed > 0 && !cfg.smoke:
		return errTargets
	}
	return nil
}

// parseFlags reads the settings; -smoke (or BENCH_SMOKE=1) changes the defaults of the
// others to a short run.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	cfg := config{
		mysql: "mysql://root:@127.0.0.1:3306/petstore_bench", redis: "redis://127.0.0.1:6379/0",
		rounds: 5, round: 10 * time.Second, warmup: 2 * time.Second, settle: time.Second, conns: 64,
		rows: 10_000, pageRows: 100_000, pageLimit: 100, rssFor: time.Minute,
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&cfg.smoke, "smoke", getenv("BENCH_SMOKE") == "1", "short run for CI: 1 round of 2 s, 1,000 rows; targets reported, not enforced")
	fs.StringVar(&cfg.mysql, "mysql", cfg.mysql, "MySQL database to create anew (its name + _pages holds the paging rows, + _hooks the webhook row)")
	fs.StringVar(&cfg.redis, "redis", cfg.redis, "Redis for the shared-limiter row")
	fs.IntVar(&cfg.rounds, "rounds", cfg.rounds, "interleaved rounds")
	fs.DurationVar(&cfg.round, "round", cfg.round, "how long each workload runs against each server per round")
	fs.DurationVar(&cfg.warmup, "warmup", cfg.warmup, "unmeasured run of each cell before the first round")
	fs.DurationVar(&cfg.settle, "settle", cfg.settle, "unmeasured load on a cell's server just before each measured run (0: none)")
	fs.IntVar(&cfg.conns, "c", cfg.conns, "connections of the load driver")
	fs.IntVar(&cfg.rows, "rows", cfg.rows, "pets seeded in the MySQL and SQLite databases")
	fs.IntVar(&cfg.pageRows, "page-rows", cfg.pageRows, "pets seeded for the paging rows")
	fs.IntVar(&cfg.pageLimit, "page-limit", cfg.pageLimit, "page size of the paging rows (the far page is page-rows/page-limit)")
	fs.DurationVar(&cfg.rssFor, "rss-load", cfg.rssFor, "mixed load before the service's resident memory is read")
	fs.StringVar(&cfg.only, "only", "", "comma-separated rows to run: "+strings.Join(rowIDs(), ","))
	fs.StringVar(&cfg.out, "out", "", "write every run's JSON line to this file")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the work folder (binaries, databases, logs)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.smoke {
		smokeDefaults(fs, &cfg)
	}
	return cfg, cfg.validate()
}

// smokeDefaults shortens every setting the command line did not set.
func smokeDefaults(fs *flag.FlagSet, cfg *config) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, apply := range map[string]func(){
		"rounds":    func() { cfg.rounds = 1 },
		"round":     func() { cfg.round = 2 * time.Second },
		"warmup":    func() { cfg.warmup = 300 * time.Millisecond },
		"settle":    func() { cfg.settle = 0 },
		"rows":      func() { cfg.rows = 1000 },
		"page-rows": func() { cfg.pageRows = 1000 },
		"rss-load":  func() { cfg.rssFor = 2 * time.Second },
	} {
		if !set[name] {
			apply()
		}
	}
}

func (c config) validate() error {
	switch {
	case c.rounds < 1 || c.round <= 0 || c.conns < 1:
		return errors.New("-rounds, -round and -c must be positive")
	case c.rows < 100 || c.pageLimit < 1 || c.pageLimit > 100 || c.pageRows < 2*c.pageLimit:
		return errors.New("-rows must be at least 100, -page-limit 1 to 100, -page-rows at least two pages")
	}
	return nil
}

// farPage returns the page number of the far paging row.
func (c config) farPage() int { return c.pageRows / c.pageLimit }
