package dbtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisProcess is one redis-server that a test started.
type redisProcess struct {
	addr   string
	dir    string
	args   []string
	cmd    *exec.Cmd     // nil when stopped
	exited chan struct{} // closed once cmd has exited
	log    string
}

// redisBinaries returns redis-cli's path once redis-server and redis-cli are found.
func redisBinaries(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		Missing(tb, "redis-server (apt-get install redis-server)", err)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		Missing(tb, "redis-cli (apt-get install redis-tools)", err)
	}
	return cli
}

// startRedis starts redis-server on a free loopback port with its files in dir and extra
// arguments, stopped when tb ends, and waits until it answers.
func startRedis(tb testing.TB, dir string, extra ...string) *redisProcess {
	tb.Helper()
	return startRedisConf(tb, dir, "", false, extra...)
}

// launchTries is how many free ports startRedisConf tries: another program (a test's client
// connecting somewhere, another test's server) may take a free port before redis-server binds it.
const launchTries = 3

// startRedisConf is startRedis with a configuration file (empty: none) and, with bus, a second
// free port for the Redis Cluster bus (--cluster-port).
func startRedisConf(tb testing.TB, dir, conf string, bus bool, extra ...string) *redisProcess {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	for try := 1; ; try++ {
		port := freePort(tb)
		p := &redisProcess{
			addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			dir:  dir,
			log:  filepath.Join(dir, "redis.log"),
			args: append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
				"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}, extra...),
		}
		if bus {
			p.args = append(p.args, "--cluster-port", strconv.Itoa(freePort(tb)))
		}
		if conf != "" {
			p.args = append([]string{conf}, p.args...)
		}
		tb.Cleanup(p.stop) // a server that starts but never answers is stopped too
		err := p.launch()
		if err == nil {
			return p
		}
		if !errors.Is(err, errPortTaken) || try == launchTries {
			tb.Fatal(err)
		}
		tb.Logf("%v; trying another port", err)
	}
}

// errPortTaken is the error of a redis-server that exited before it answered (most often, its
// port was taken) or whose port another server answers on.
var errPortTaken = errors.New("redis-server could not take its port")

// start runs the server again, on its port, and waits until it answers.
func (p *redisProcess) start(tb testing.TB) {
	tb.Helper()
	if err := p.launch(); err != nil {
		tb.Fatal(err)
	}
}

// launch runs the server and waits until it answers; an error wrapping errPortTaken when it
// exits first or another server answers on its port.
func (p *redisProcess) launch() error {
	cmd := exec.Command("redis-server", p.args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	ours := fmt.Sprintf("process_id:%d\r\n", cmd.Process.Pid)
	another := false
	err := poll("redis-server at "+p.addr+" (log: "+p.log+")", func(ctx context.Context, c *redis.Client) bool {
		info, err := c.Info(ctx, "server").Result()
		var reply redis.Error // NOAUTH: it answers, but wants a password
		if err != nil {
			return errors.As(err, &reply)
		}
		another = !strings.Contains(info, ours)
		return true
	}, p.addr, exited)
	if err == nil && another {
		p.stop()
		err = fmt.Errorf("%w: another process answers on port %s", errPortTaken, port(p.addr))
	}
	if errors.Is(err, errExited) {
		log, _ := os.ReadFile(p.log)
		err = fmt.Errorf("%w: it exited: %s", errPortTaken, bytes.TrimSpace(log))
	}
	return err
}

// stop kills the server, if running, and reaps it.
func (p *redisProcess) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.cmd = nil
}

// waitFor polls ok with a client of addr until it holds, for at most 20 seconds.
func waitFor(tb testing.TB, what string, ok func(context.Context, *redis.Client) bool, addr string) {
	tb.Helper()
	if err := poll(what, ok, addr, nil); err != nil {
		tb.Fatal(err)
	}
}

// errExited is poll's error when the process it waits for exits.
var errExited = errors.New("exited")

// poll is waitFor returning its error; it gives up at once, with errExited, when exited (nil:
// never) is closed.
func poll(what string, ok func(context.Context, *redis.Client) bool, addr string, exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		done := ok(ctx, c)
		cancel()
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited 20s for %s", what)
		}
		select {
		case <-exited:
			return errExited
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
