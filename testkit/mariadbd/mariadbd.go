// Package mariadbd runs MariaDB servers of the caller's own: a fresh data directory made by
// mariadb-install-db (root without a password), a loopback port, small buffers and the binary
// log on (any of them can be a primary). The tests' primary and replica (internal/dbtest) and
// the soak's restarted database (perf/soak) are started here, so that nothing that stops or
// restarts a database ever touches the machine's own MariaDB: a Server signals only the
// process it started.
package mariadbd

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // the connection that waits until the server answers
)

// StartTimeout bounds a start, from the process's launch until it answers.
const StartTimeout = time.Minute

// StopTimeout is how long Stop waits after SIGTERM before it kills the server.
const StopTimeout = 30 * time.Second

// launchTries is how many free ports Launch tries: another program may take a free port
// before mariadbd binds it.
const launchTries = 3

// Binary returns the path of mariadbd: found on PATH, else Debian's /usr/sbin/mariadbd.
func Binary() (string, error) {
	path, err := exec.LookPath("mariadbd")
	if err != nil {
		path, err = exec.LookPath("/usr/sbin/mariadbd")
	}
	return path, err
}

// installTries is how many times Install runs mariadb-install-db: its bootstrap server has
// been seen to crash (signal 11 dropping an Aria temporary table) while another ran beside it.
const installTries = 3

// Install makes a fresh data directory dir (mariadb-install-db) whose root has no password.
// The bootstrap server keeps its temporary tables in a directory of its own (dir.tmp, removed
// after), not in the /tmp that other installs and servers share; a failed install is tried
// again from an empty directory.
func Install(dir string) error {
	tmp := dir + ".tmp"
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := []string{"--no-defaults", "--datadir=" + dir, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M", "--tmpdir=" + tmp}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	var err error
	for range installTries {
		var out []byte
		if out, err = exec.Command("mariadb-install-db", args...).CombinedOutput(); err == nil {
			return nil
		}
		err = fmt.Errorf("mariadb-install-db: %w: %s", err, out)
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			return rmErr
		}
	}
	return err
}

// Config is the server Launch starts.
type Config struct {
	Binary string // the mariadbd program, from Binary
	// Dir is a data directory made by Install. The server's socket, pid file and error log
	// are Dir.sock, Dir.pid and Dir.err: keep it short, a socket path holds at most 107 bytes.
	Dir      string
	Port     int      // the loopback port; 0 for a free one
	ServerID int      // --server-id (1 when 0), unique among servers that replicate
	Extra    []string // more options, after (and so over) the defaults
}

// Server is a mariadbd that Launch started. Stop it when done: it outlives its caller
// otherwise. It runs in a process group of its own, so that a Ctrl-C at the terminal
// reaches its caller only, which stops it after what uses it.
type Server struct {
	Port int // the loopback port, the same across Stop and Start
	cfg  Config

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil when stopped
	exited chan struct{} // closed once cmd has exited
}

// Launch starts mariadbd as cfg says and waits until it answers, for at most StartTimeout or
// until ctx ends. With cfg.Port 0 it picks a free loopback port, and tries another if mariadbd
// cannot start on it.
func Launch(ctx context.Context, cfg Config) (*Server, error) {
	var err error
	for range launchTries {
		s := &Server{Port: cfg.Port, cfg: cfg}
		if cfg.Port == 0 {
			if s.Port, err = freePort(); err != nil {
				return nil, err
			}
		}
		if err = s.Start(ctx); err == nil {
			return s, nil
		}
		if cfg.Port != 0 || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// Start starts the server again after Stop, on the same port and data directory, and waits
// until it answers, for at most StartTimeout or until ctx ends. A server that does not answer
// by then is stopped. Start does nothing while the server runs.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	dir := s.cfg.Dir
	args := append([]string{"--no-defaults", "--datadir=" + dir, "--port=" + strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1", "--socket=" + dir + ".sock", "--pid-file=" + dir + ".pid",
		"--log-error=" + dir + ".err", "--server-id=" + strconv.Itoa(max(s.cfg.ServerID, 1)), "--log-bin=bin",
		"--gtid-strict-mode=1", "--skip-name-resolve", "--innodb-buffer-pool-size=16M",
		"--innodb-log-file-size=4M", "--performance-schema=0", "--max-connections=300"}, s.cfg.Extra...)
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(s.cfg.Binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	if err := s.waitAnswering(ctx); err != nil {
		_ = s.stopLocked()
		return err
	}
	return nil
}

// waitAnswering waits until the server answers a ping as root, for at most StartTimeout or
// until ctx ends; it fails at once when the process exits.
func (s *Server) waitAnswering(ctx context.Context) error {
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?timeout=2s", s.Port))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err = db.PingContext(ctx); err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("mariadbd on port %d exited: %s", s.Port, s.ErrorLog())
		case <-ctx.Done():
			return fmt.Errorf("mariadbd on port %d does not answer: %w (%v): %s", s.Port, ctx.Err(), err, s.ErrorLog())
		case <-tick.C:
		}
	}
}

// Stop sends SIGTERM to the server and waits until it has exited; after StopTimeout it kills
// it. It returns an error when the server had to be killed or exited with a failure status.
// Stop does nothing when the server is stopped.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

// stopLocked is Stop with s.mu held.
func (s *Server) stopLocked() error {
	cmd, exited := s.cmd, s.exited
	if cmd == nil {
		return nil
	}
	s.cmd = nil
	_ = cmd.Process.Signal(syscall.SIGCONT) // a frozen server would not act on SIGTERM
	_ = cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case <-exited:
	case <-time.After(StopTimeout):
		_ = cmd.Process.Kill()
		<-exited
		err = fmt.Errorf("mariadbd on port %d did not exit within %v of SIGTERM and was killed", s.Port, StopTimeout)
	}
	if state := cmd.ProcessState; err == nil && !state.Success() {
		err = fmt.Errorf("mariadbd on port %d: %v: %s", s.Port, state, s.ErrorLog())
	}
	return err
}

// Pid returns the process id of the running server, or 0 when it is stopped.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Freeze stops the server's process (SIGSTOP): its connections stay open and nothing
// answers.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw continues the server's process after Freeze.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

// signal sends sig to the running server.
func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// DSN returns the PETSTORE_DB address of database name on the server, as root.
func (s *Server) DSN(name string) string {
	return fmt.Sprintf("mysql://root:@127.0.0.1:%d/%s", s.Port, name)
}

// ErrorLog returns the last lines of the server's error log.
func (s *Server) ErrorLog() string {
	b, _ := os.ReadFile(s.cfg.Dir + ".err")
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
