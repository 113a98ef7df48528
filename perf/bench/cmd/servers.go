package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The columns of the table: which server a cell ran against.
const (
	colService  = "service"   // the service as shipped: default settings, page cache on
	colCacheOff = "cache-off" // the service with PETSTORE_PAGE_CACHE=off: every page read from the database
	colDirect   = "direct"    // the tuned Gin + GORM peer
	colRaw      = "raw"       // net/http + database/sql
)

// columns lists every column in the order each round runs a row's cells.
var columns = []string{colService, colCacheOff, colDirect, colRaw}

// binary returns the binary (bench.bins) that column runs.
func binary(column string) string {
	if column == colCacheOff {
		return colService
	}
	return column
}

// server is one running server process under test.
type server struct {
	name   string // unique, such as "service/mysql+redis"
	column string // one of columns
	data   *dataset
	addr   string // 127.0.0.1:PORT
	cmd    *exec.Cmd
	exited chan error
	log    *os.File
	hook   *hookReceiver // the endpoint registered on it, if any
}

// startServer starts column's server (binary bin) on a free loopback port against data; extra
// are further PETSTORE_ variables of the service. It returns once /healthz answers.
func startServer(ctx context.Context, name, column, bin, workDir string, data *dataset, extra map[string]string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{name: name, column: column, data: data, addr: addr, exited: make(chan error, 1)}
	if s.log, err = os.Create(filepath.Join(workDir, strings.NewReplacer("/", "-", "+", "-").Replace(name)+".log")); err != nil {
		return nil, err
	}
	if binary(column) == colService {
		// The service as shipped: its default log level writes one line per request (to the
		// log file, as a production instance writes to its collector).
		vars := map[string]string{"PETSTORE_ADDR": addr, "PETSTORE_DB": data.dsn, "PETSTORE_ENV": "development"}
		if column == colCacheOff {
			vars["PETSTORE_PAGE_CACHE"] = "off"
		}
		for k, v := range extra {
			vars[k] = v
		}
		s.cmd = exec.Command(bin, "serve")
		s.cmd.Env = serviceEnv(vars)
	} else {
		s.cmd = exec.Command(bin, "-addr", addr, "-db", data.dsn)
		s.cmd.Env = serviceEnv(nil)
	}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	if err := s.waitHealthy(ctx); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %w (log: %s)", name, err, s.log.Name())
	}
	return s, nil
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHealthy polls /healthz for up to a minute.
func (s *server) waitHealthy(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			s.exited <- err
			return fmt.Errorf("exited before serving: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := client.Get("http://" + s.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return errors.New("/healthz did not answer 200 within a minute")
}

// stop sends SIGTERM, waits up to 15 s for the process to drain and exit, then kills it.
func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
	_ = s.log.Close()
	if s.hook != nil {
		s.hook.close()
	}
}

// memory returns the process's resident set now and at its peak (VmRSS, VmHWM), in bytes.
func (s *server) memory() (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, value, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// clockTicks is Linux's USER_HZ: /proc reports CPU time in hundredths of a second.
const clockTicks = 100

// cpuTime returns the CPU time (user and system) the process has used, or 0 when /proc cannot
// tell.
func (s *server) cpuTime() time.Duration {
	return time.Duration(procTicks(s.cmd.Process.Pid)) * time.Second / clockTicks
}

// checkPageCache fails unless a server of the service keeps pages in memory exactly when its
// column says so, as its /metrics tell: a cache-off column whose setting did not take would
// measure the cache twice.
func (s *server) checkPageCache(ctx context.Context) error {
	if binary(s.column) != colService {
		return nil
	}
	_, err := s.pageCacheBytes(ctx)
	if err != nil && !errors.Is(err, errCacheOff) {
		return err
	}
	if on, want := err == nil, s.column != colCacheOff; on != want {
		return fmt.Errorf("page cache on: %t; want %t", on, want)
	}
	return nil
}

// errCacheOff is pageCacheBytes's answer for a service whose /metrics have no page cache.
var errCacheOff = errors.New("/metrics has no petstore_page_cache_bytes: the page cache is off")

// pageCacheBytes returns what the service's page cache holds, as the cache weighs its pages
// (petstore_page_cache_bytes on /metrics), or errCacheOff.
func (s *server) pageCacheBytes(ctx context.Context) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if value, ok := strings.CutPrefix(line, "petstore_page_cache_bytes "); ok {
			return strconv.ParseFloat(value, 64)
		}
	}
	return 0, errCacheOff
}
