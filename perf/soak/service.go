package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"petstore/internal/testkit/mariadbd"
)

// The run's services: the machine's Redis, and a database on a mariadbd of the run's own.
const (
	redisURL = "redis://127.0.0.1:6379/0"
	dbName   = "petstore_soak"
)

// keyLimit is the per-minute and per-day limit of the run's enterprise key: no run comes
// near it, so that the limiter counters a previous run left in Redis under the same key id
// never bind.
const keyLimit = "1000000000000"

// environment is what the run set up, and undoes in tearDown.
type environment struct {
	opts  options
	dir   string // work folder: the service binary and its log, MariaDB's data directory and log
	bin   string
	dbDir string           // MariaDB's data directory, in the work folder
	db    *mariadbd.Server // the run's own MariaDB
	key   string           // the enterprise API key
	svc   *service
}

// setUp builds the service, starts a MariaDB of the run's own with a fresh database, creates a
// key and starts the service.
func (e *environment) setUp(ctx context.Context) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if e.dir, err = os.MkdirTemp("", "petstore-soak-"); err != nil {
		return err
	}
	e.bin = filepath.Join(e.dir, "petstore")
	log.Printf("building the service into %s", e.dir)
	if err := goBuild(ctx, root, e.bin); err != nil {
		return err
	}
	e.dbDir = filepath.Join(e.dir, "db")
	log.Print("starting a MariaDB of the run's own")
	e.db, err = startDatabase(ctx, e.dbDir)
	if err != nil {
		return fmt.Errorf("MariaDB: %w", err)
	}
	log.Printf("MariaDB pid %d at 127.0.0.1:%d (data directory %s, log %s.err)", e.db.Pid(), e.db.Port, e.dbDir, e.dbDir)
	if e.key, err = e.createKey(ctx); err != nil {
		return err
	}
	e.svc, err = startService(ctx, e.bin, e.serviceEnv(), filepath.Join(e.dir, "petstore.log"))
	if err != nil {
		return err
	}
	log.Printf("service pid %d at %s (log: %s)", e.svc.pid(), e.svc.base, e.svc.logPath)
	return nil
}

// tearDown stops the service if it still runs, stops the run's MariaDB and removes its data
// directory unless -keep, and removes the work folder unless -keep or failed.
func (e *environment) tearDown(failed bool) {
	if e.svc != nil {
		e.svc.kill()
	}
	if e.dir == "" {
		return
	}
	stopDatabase(e.db, e.dbDir, e.opts.keep)
	switch {
	case e.opts.keep:
		log.Printf("kept the work folder %s (service binary and log, MariaDB's data directory db and log db.err)", e.dir)
		return
	case failed:
		log.Printf("kept the work folder %s (service binary and log, MariaDB's log db.err)", e.dir)
		return
	}
	if err := os.RemoveAll(e.dir); err != nil {
		log.Print(err)
	}
}

// serviceEnv returns the service's environment: this process's, without any PETSTORE_
// variable, plus the run's settings.
func (e *environment) serviceEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PETSTORE_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"PETSTORE_DB="+e.db.DSN(dbName),
		"PETSTORE_REDIS_URL="+redisURL,
		"PETSTORE_ADDR=127.0.0.1:0", // the kernel picks a free port; the service prints it
		"PETSTORE_DB_TIMEOUT=2s",
		"PETSTORE_ENV=development",
		"PETSTORE_LOG_LEVEL="+e.opts.logLevel,
	)
}

// createKey runs `petstore keys create --plan enterprise` with limits no run reaches and
// returns the key, the last line of its output.
func (e *environment) createKey(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, e.bin, "keys", "create", "--plan", "enterprise",
		"--per-minute", keyLimit, "--per-day", keyLimit, "--name", "soak")
	cmd.Env = e.serviceEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("keys create: %w\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// repoRoot returns the folder of the petstore module's go.mod, from the working directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module petstore\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the soak inside the petstore repository")
		}
		dir = parent
	}
}

// goBuild compiles the service (the module's root package) into bin.
func goBuild(ctx context.Context, root, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	return nil
}

// service is the running `petstore serve` process.
type service struct {
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:PORT
	logPath string
	exited  chan struct{} // closed once the process has exited
	exitErr error         // its exit status, once exited is closed
}

// startupTimeout bounds the service's migrations and start.
const startupTimeout = time.Minute

// startService starts `bin serve` in its own process group (so that only this program
// signals it), with stdout and stderr in the log file, and waits for its address.
func startService(ctx context.Context, bin string, env []string, logPath string) (*service, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	addr := &addrWatcher{addr: make(chan string, 1)}
	s := &service{cmd: exec.Command(bin, "serve"), logPath: logPath, exited: make(chan struct{})}
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = io.MultiWriter(logFile, addr), logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		_ = logFile.Close()
		close(s.exited)
	}()
	select {
	case a := <-addr.addr:
		s.base = a
	case <-s.exited:
		return nil, fmt.Errorf("the service exited at start (%v); see %s", s.exitErr, logPath)
	case <-time.After(startupTimeout):
		s.kill()
		return nil, fmt.Errorf("the service printed no address within %v; see %s", startupTimeout, logPath)
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
	return s, waitStatus(ctx, s.base+"/readyz", http.StatusOK, startupTimeout)
}

// pid returns the service's process id.
func (s *service) pid() int { return s.cmd.Process.Pid }

// terminate sends SIGTERM and waits up to timeout for the exit; it returns how long the exit
// took and the exit status.
func (s *service) terminate(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case <-s.exited:
		return time.Since(start), s.exitErr
	case <-time.After(timeout):
		return time.Since(start), fmt.Errorf("no exit within %v of SIGTERM", timeout)
	}
}

// kill ends the service if it still runs.
func (s *service) kill() {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// addrWatcher receives the service's stdout and sends the address of its "petstore
// listening on" line, once.
type addrWatcher struct {
	buf  []byte
	addr chan string
	sent bool
}

// Write looks for the address line in what the service printed so far.
func (w *addrWatcher) Write(p []byte) (int, error) {
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		line, rest, ok := bytes.Cut(w.buf, []byte("\n"))
		if !ok {
			return len(p), nil
		}
		w.buf = rest
		if a, found := strings.CutPrefix(string(line), "petstore listening on "); found {
			if f := strings.Fields(a); len(f) > 0 {
				w.addr <- f[0]
				w.sent, w.buf = true, nil
				return len(p), nil
			}
		}
	}
}

// waitStatus polls url until it answers want, for at most timeout.
func waitStatus(ctx context.Context, url string, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	for {
		code, err := getStatus(ctx, client, url)
		if code == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %d within %v (last: %d %v)", url, want, timeout, code, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// getStatus returns the status of a GET of url.
func getStatus(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
