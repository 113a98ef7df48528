// Command load drives one pet store server with one workload and prints what it measured: a
// JSON line (machine-readable) and a table (for people).
//
//	go run ./bench/load -url http://127.0.0.1:8080 -key petstore_test_... -workload list -c 64 -d 10s
//
// Workloads: list (GET /v1/pets?limit=20), list-sold (?status=sold&limit=100), post (unique
// names), graphql ({ pets(limit:20) {...} }), get (GET /v1/pets/{petId} over -ids), page (page
// -page of ?limit=-limit, found once by following the Link headers), mix (all in turn).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"petstore/perf/bench/internal/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// flags are the command line of load.
type flags struct {
	base     string
	key      string
	workload string
	conns    int
	duration time.Duration
	requests int
	ids      string
	page     int
	limit    int
	tag      string
}

// run parses args, runs the workload and prints its summary; it fails when any request failed.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	u, err := url.Parse(f.base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("-url must be http://HOST:PORT; got %q", f.base)
	}
	p, err := params(ctx, f, u.Host)
	if err != nil {
		return err
	}
	b, err := loadgen.Build(f.workload, p)
	if err != nil {
		return err
	}
	res, err := loadgen.Run(ctx, loadgen.Options{Addr: u.Host, Conns: f.conns, Duration: f.duration, Requests: f.requests, Build: b})
	if err != nil {
		return err
	}
	s := res.Summarize(f.workload, f.conns)
	if err := s.WriteLine(stdout); err != nil {
		return err
	}
	if err := s.WriteTable(stdout); err != nil {
		return err
	}
	if s.Errors > 0 {
		return fmt.Errorf("%d of %d requests failed (%s)", s.Errors, s.Requests, s.StatusList())
	}
	return nil
}

func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.base, "url", "http://127.0.0.1:8080", "server base address")
	fs.StringVar(&f.key, "key", os.Getenv("PETSTORE_KEY"), "API key (default $PETSTORE_KEY)")
	fs.StringVar(&f.workload, "workload", loadgen.List, "one of "+strings.Join(loadgen.Workloads, ", "))
	fs.IntVar(&f.conns, "c", 64, "connections, each one request at a time")
	fs.DurationVar(&f.duration, "d", 10*time.Second, "how long to send (unless -n)")
	fs.IntVar(&f.requests, "n", 0, "stop after this many requests (0: run for -d)")
	fs.StringVar(&f.ids, "ids", "1-1000", "get, mix: the pet ids to read, FIRST-LAST")
	fs.IntVar(&f.page, "page", 1000, "page: the page number to hammer (1 is the first)")
	fs.IntVar(&f.limit, "limit", 100, "page: the page size")
	fs.StringVar(&f.tag, "tag", strconv.FormatInt(time.Now().UnixNano(), 36), "post, mix: makes the names unique")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return f, nil
}

// params returns the workload's parameters; for the page workload it finds the page's path.
func params(ctx context.Context, f flags, host string) (loadgen.Params, error) {
	p := loadgen.Params{Host: host, Key: f.key, Tag: f.tag}
	first, last, ok := strings.Cut(f.ids, "-")
	var err1, err2 error
	p.MinID, err1 = strconv.ParseInt(first, 10, 64)
	p.MaxID, err2 = strconv.ParseInt(last, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return p, errors.New("-ids must be FIRST-LAST, such as 1-10000")
	}
	if f.workload == loadgen.Page {
		path, err := loadgen.FindPage(ctx, host, p, f.limit, f.page)
		if err != nil {
			return p, err
		}
		p.Path = path
	}
	return p, nil
}
