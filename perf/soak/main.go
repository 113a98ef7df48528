// Command soak is the load and soak test of the pet store service (`make soak`; not part of
// `make test`). It builds the service, starts a MariaDB of its own (a fresh data directory in
// its work folder, a free loopback port) with a fresh database petstore_soak, runs the service
// against it and Redis, and drives it for a few minutes from many keep-alive clients with a
// mix of list, create and get requests. In the middle it restarts its MariaDB for real
// (SIGTERM, down for the outage, started again on the same port and data directory). Failed
// creates are retried with their Idempotency-Key until they are acknowledged. At the end it
// checks that no 5xx came outside the restart window, that every acknowledged pet is stored
// exactly once, that memory stayed flat after the warm-up and that the service survived and
// exits cleanly on SIGTERM, prints a summary table, and exits with status 1 when a check fails.
//
//	go run ./soak                    # 3 minutes, 64 workers, MariaDB restarted at 40 %
//	go run ./soak -smoke             # 20 s, 16 workers, a 2 s outage
//	go run ./soak -restart=false -duration 10m -keep
//
// It needs mariadbd and mariadb-install-db (Debian's mariadb-server) and Redis at
// 127.0.0.1:6379; the machine's own MariaDB is never used, stopped or restarted. On every way
// out (including SIGINT and SIGTERM) it stops its MariaDB and removes the data directory
// unless -keep. The work folder (service binary and log, MariaDB's log db.err) is removed
// unless -keep or a check failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the command line settings.
type options struct {
	duration time.Duration // how long the load runs
	workers  int           // concurrent clients
	restart  bool          // restart MariaDB in the middle
	outage   time.Duration // how long MariaDB stays down
	grace    time.Duration // added to the restart window after MariaDB answers again
	warmup   time.Duration // when the reference RSS is taken
	settle   time.Duration // how long unacknowledged creates keep retrying after the load
	timeout  time.Duration // client timeout of one request
	logLevel string        // the service's PETSTORE_LOG_LEVEL
	keep     bool          // keep the database and the work folder
	smoke    bool          // quick preset
}

// smokePreset is what -smoke changes, unless the flag is given too.
var smokePreset = map[string]string{"duration": "20s", "workers": "16", "outage": "2s", "warmup": "5s"}

// parseFlags reads the command line.
func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.DurationVar(&o.duration, "duration", 3*time.Minute, "how long the load runs")
	fs.IntVar(&o.workers, "workers", 64, "concurrent keep-alive clients")
	fs.BoolVar(&o.restart, "restart", true, "stop and start MariaDB at 40% of the duration")
	fs.DurationVar(&o.outage, "outage", 5*time.Second, "how long MariaDB stays stopped")
	fs.DurationVar(&o.grace, "grace", 5*time.Second, "added to the restart window once MariaDB answers again")
	fs.DurationVar(&o.warmup, "warmup", 20*time.Second, "warm-up: the RSS taken then is the reference")
	fs.DurationVar(&o.settle, "settle", 150*time.Second,
		"after the load, how long unacknowledged creates keep retrying (past the service's 2-minute idempotency lease)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "client timeout of one request")
	fs.StringVar(&o.logLevel, "log-level", "info", "the service's PETSTORE_LOG_LEVEL (its log is in the work folder)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work folder with MariaDB's data directory (db)")
	fs.BoolVar(&o.smoke, "smoke", false, "quick run: -duration 20s -workers 16 -outage 2s -warmup 5s")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.smoke {
		if err := applyPreset(fs); err != nil {
			return o, err
		}
	}
	return o, o.validate()
}

// applyPreset sets the -smoke values of the flags that the command line did not set.
func applyPreset(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, value := range smokePreset {
		if !set[name] {
			if err := fs.Set(name, value); err != nil {
				return err
			}
		}
	}
	return nil
}

// validate refuses settings the run cannot use.
func (o options) validate() error {
	switch {
	case o.duration <= 0 || o.workers < 1 || o.timeout <= 0:
		return errors.New("-duration, -workers and -timeout must be positive")
	case o.warmup < 0 || o.warmup >= o.duration:
		return fmt.Errorf("-warmup must be shorter than -duration (%v); got %v", o.duration, o.warmup)
	case o.outage < 0 || o.grace < 0 || o.settle < 0:
		return errors.New("-outage, -grace and -settle must not be negative")
	}
	return nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs the soak and returns the exit status: 0 when every check passed, 1 when one
// failed or the run could not be completed, 2 for a bad command line.
func run(args []string) int {
	log.SetFlags(log.Ltime)
	log.SetPrefix("soak: ")
	opts, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		log.Print(err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &environment{opts: opts}
	passed := false
	defer func() { env.tearDown(!passed) }()
	passed = soak(ctx, env)
	if ctx.Err() != nil {
		log.Print("interrupted")
		passed = false
	}
	if !passed {
		return 1
	}
	return 0
}

// soak sets the service up, drives it, checks the outcome and prints the summary; it reports
// whether every check passed.
func soak(ctx context.Context, env *environment) bool {
	if err := env.setUp(ctx); err != nil {
		log.Printf("setup: %v", err)
		return false
	}
	res := drive(ctx, env)
	checks := evaluate(ctx, env, res)
	res.logs, res.logErr = summarizeLog(env.svc.logPath)
	printSummary(os.Stdout, env.opts, res, checks)
	return allPass(checks)
}
