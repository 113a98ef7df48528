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

// RedisCluster is a Redis Cluster of three primaries (no replicas) that a test started on free
// loopback ports with redis-server, each node in a directory of its own, without persistence.
// It is stopped when the test ends. The machine's own Redis is never touched.
type RedisCluster struct {
	Addrs []string // the nodes' addresses, host:port
	nodes []*redisProcess
}

// NewRedisCluster starts a three-node Redis Cluster for tb and waits until it serves every slot.
// It skips tb, or fails it where services are required, when redis-server or redis-cli is not
// installed.
func NewRedisCluster(tb testing.TB) *RedisCluster {
	tb.Helper()
	cli := redisBinaries(tb)
	c := &RedisCluster{}
	for i := range 3 {
		p := startRedisConf(tb, filepath.Join(tb.TempDir(), fmt.Sprint("node", i)), "", true,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			// A stopped primary is declared failed after a second: the cluster then refuses
			// every key (cluster-require-full-coverage) until it returns.
			"--cluster-node-timeout", "1000")
		c.nodes = append(c.nodes, p)
		c.Addrs = append(c.Addrs, p.addr)
	}
	args := append(append([]string{"--cluster", "create"}, c.Addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy(tb)
	return c
}

// URL returns the PETSTORE_REDIS_URL of the cluster: its first node, the others as addr=.
func (c *RedisCluster) URL() string {
	return "redis://" + c.Addrs[0] + "?addr=" + strings.Join(c.Addrs[1:], "&addr=")
}

// Client returns a cluster client with short timeouts, closed when tb ends.
func (c *RedisCluster) Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1, DialerRetries: 1,
	})
	tb.Cleanup(func() { _ = client.Close() })
	return client
}

// Stop kills node i (SIGKILL: no goodbye to the others).
func (c *RedisCluster) Stop(tb testing.TB, i int) {
	tb.Helper()
	c.nodes[i].stop()
}

// Restart starts node i again, on its port and with its nodes.conf, and waits until the
// cluster serves every slot again. Its data is gone (no persistence); its slots are its own.
func (c *RedisCluster) Restart(tb testing.TB, i int) {
	tb.Helper()
	c.nodes[i].start(tb)
	c.WaitHealthy(tb)
}

// WaitHealthy waits until every node reports cluster_state:ok and all 16,384 slots served.
func (c *RedisCluster) WaitHealthy(tb testing.TB) {
	tb.Helper()
	for _, addr := range c.Addrs {
		waitFor(tb, "cluster_state:ok at "+addr, func(ctx context.Context, client *redis.Client) bool {
			info, err := client.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_slots_ok:16384") && strings.Contains(info, "cluster_known_nodes:3")
		}, addr)
	}
}

// StartRedis starts a lone redis-server for tb on a free loopback port, with the extra
// arguments given (such as "--requirepass", "pw"), stopped when tb ends, and returns its
// address. It skips tb, or fails it where services are required, when redis-server is not
// installed.
func StartRedis(tb testing.TB, extra ...string) string {
	tb.Helper()
	return NewRedisServer(tb, extra...).Addr
}

// RedisServer is a lone redis-server that a test started on a free loopback port, without
// persistence, and may stop and start again; it is stopped when the test ends. The machine's
// own Redis is never touched.
type RedisServer struct {
	Addr string // host:port
	p    *redisProcess
}

// NewRedisServer starts a lone redis-server for tb with the extra arguments given, as
// StartRedis does.
func NewRedisServer(tb testing.TB, extra ...string) *RedisServer {
	tb.Helper()
	redisBinaries(tb)
	p := startRedis(tb, tb.TempDir(), extra...)
	return &RedisServer{Addr: p.addr, p: p}
}

// URL returns the PETSTORE_REDIS_URL of the server.
func (s *RedisServer) URL() string { return "redis://" + s.Addr + "/0" }

// Stop kills the server (SIGKILL).
func (s *RedisServer) Stop(tb testing.TB) {
	tb.Helper()
	s.p.stop()
}

// Restart starts the server again on its port, empty (no persistence), and waits until it
// answers.
func (s *RedisServer) Restart(tb testing.TB) {
	tb.Helper()
	s.p.start(tb)
}

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
		Unreachable(tb, "redis-server (apt-get install redis-server)", err)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		Unreachable(tb, "redis-cli (apt-get install redis-tools)", err)
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
