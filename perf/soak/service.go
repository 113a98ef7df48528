package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

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
