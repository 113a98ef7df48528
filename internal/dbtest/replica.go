package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the admin connections

	"petstore/store"
)

// ReplicaPair is a primary mariadbd and a replica of it, of one test's own: their own data
// directories and ports, GTID replication, stopped when the test ends. The machine's own
// MariaDB is never touched.
type ReplicaPair struct {
	Primary, Replica *Server
}

// Server is one mariadbd that a test started.
type Server struct {
	Port   int
	Admin  *sql.DB // root, no database
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Replicated returns a fresh, migrated database on a primary of tb's own with one replica of it
// attached as db.Replicas (already serving reads), and the pair, so that the test can pause
// replication or stop the replica. Where services are required (CI), a server that cannot
// start fails tb; elsewhere it skips it.
func Replicated(tb testing.TB) (*store.DB, *ReplicaPair) {
	tb.Helper()
	pair := StartReplicaPair(tb)
	ctx := context.Background()
	pair.Primary.Exec(tb, "CREATE DATABASE petstore CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	db, err := store.Open(ctx, pair.Primary.DSN("petstore"), store.DefaultPool)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	pair.WaitApplied(tb)
	if db.Replicas, err = store.OpenReplicas(ctx, db, []string{pair.Replica.DSN("petstore")}, store.DefaultPool); err != nil {
		tb.Fatal(err)
	}
	WaitReady(tb, db.Replicas, 1)
	return db, pair
}

// WaitReady waits up to 30 s until n replicas of rs may serve reads.
func WaitReady(tb testing.TB, rs *store.Replicas, n int) {
	tb.Helper()
	waitReady(tb, rs, n, 0)
}

// WaitSettled waits up to 30 s until a replica of rs may serve reads and has every pet up to
// id settled.
func WaitSettled(tb testing.TB, rs *store.Replicas, id int64) {
	tb.Helper()
	waitReady(tb, rs, 1, id)
}

func waitReady(tb testing.TB, rs *store.Replicas, n int, settled int64) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); rs.Ready(settled) != n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("replicas ready with pets up to %d settled: got %d; want %d", settled, rs.Ready(settled), n)
		}
	}
}

// StartReplicaPair starts a primary and a replica that replicates from it with GTIDs.
func StartReplicaPair(tb testing.TB) *ReplicaPair {
	tb.Helper()
	mariadbd, err := exec.LookPath("mariadbd")
	if err != nil {
		mariadbd, err = exec.LookPath("/usr/sbin/mariadbd")
	}
	if err != nil {
		Unreachable(tb, "mariadbd", err)
	}
	base, err := os.MkdirTemp("", "petstore-mdb-") // short: a socket path holds at most 107 bytes
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := installDataDir(filepath.Join(base, "p")); err != nil {
		Unreachable(tb, "mariadb-install-db", err)
	}
	if err := os.CopyFS(filepath.Join(base, "r"), os.DirFS(filepath.Join(base, "p"))); err != nil {
		tb.Fatal(err)
	}
	pair := &ReplicaPair{
		Primary: startServer(tb, mariadbd, filepath.Join(base, "p"), 1),
		Replica: startServer(tb, mariadbd, filepath.Join(base, "r"), 2, "--read-only=1"),
	}
	pair.Replica.Exec(tb, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', "+
		"MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1", pair.Primary.Port))
	pair.Replica.Exec(tb, "START SLAVE")
	pair.waitRunning(tb)
	return pair
}

// installDataDir makes a data directory whose root has no password.
func installDataDir(dir string) error {
	args := []string{"--no-defaults", "--datadir=" + dir, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	out, err := exec.Command("mariadb-install-db", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// startServer starts mariadbd on dir with server id id, on a free port, small buffers and the
// binary log on (every server can be a primary), stopped when tb ends.
func startServer(tb testing.TB, mariadbd, dir string, id int, extra ...string) *Server {
	tb.Helper()
	var lastErr error
	for range 3 { // the free port may be taken before the server binds it
		s, err := launch(mariadbd, dir, freePort(tb), id, extra)
		if err == nil {
			tb.Cleanup(s.stop)
			return s
		}
		lastErr = err
	}
	Unreachable(tb, "a test mariadbd", lastErr)
	return nil
}

// launch starts mariadbd and waits up to 60 s until it answers.
func launch(mariadbd, dir string, port, id int, extra []string) (*Server, error) {
	args := append([]string{"--no-defaults", "--datadir=" + dir, "--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--socket=" + dir + ".sock", "--pid-file=" + dir + ".pid",
		"--log-error=" + dir + ".err", "--server-id=" + strconv.Itoa(id), "--log-bin=bin", "--gtid-strict-mode=1",
		"--skip-name-resolve", "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=4M",
		"--performance-schema=0", "--max-connections=300"}, extra...)
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(mariadbd, args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Port: port, dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	admin, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?timeout=2s", port))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.Admin = admin
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case <-s.exited:
			s.stop()
			return nil, fmt.Errorf("mariadbd exited: %s", s.errorLog())
		default:
		}
		if err = admin.Ping(); err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("mariadbd does not answer: %v: %s", err, s.errorLog())
		}
	}
}

// errorLog returns the last lines of the server's error log.
func (s *Server) errorLog() string {
	b, _ := os.ReadFile(s.dir + ".err")
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

// DSN returns the PETSTORE_DB address of database name on s.
func (s *Server) DSN(name string) string {
	return fmt.Sprintf("mysql://root:@127.0.0.1:%d/%s", s.Port, name)
}

// Exec runs query on s as root.
func (s *Server) Exec(tb testing.TB, query string, args ...any) {
	tb.Helper()
	if _, err := s.Admin.Exec(query, args...); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

// Freeze stops s's process (SIGSTOP): its connections stay open and nothing answers.
func (s *Server) Freeze() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Thaw continues s's process after Freeze.
func (s *Server) Thaw() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Stop stops s (SIGTERM, then SIGKILL after 30 s) and waits for it to exit.
func (s *Server) Stop() { s.stop() }

func (s *Server) stop() {
	if s.Admin != nil {
		_ = s.Admin.Close()
	}
	s.Thaw()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// PauseApply stops the replica's SQL thread: it goes on receiving the primary's transactions
// but applies none, so it falls behind as writes go on.
func (p *ReplicaPair) PauseApply(tb testing.TB) { p.Replica.Exec(tb, "STOP SLAVE SQL_THREAD") }

// ResumeApply starts the replica's SQL thread again.
func (p *ReplicaPair) ResumeApply(tb testing.TB) { p.Replica.Exec(tb, "START SLAVE SQL_THREAD") }

// WaitApplied waits up to 30 s until the replica has applied every transaction the primary
// has committed.
func (p *ReplicaPair) WaitApplied(tb testing.TB) {
	tb.Helper()
	var pos string
	if err := p.Primary.Admin.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		tb.Fatal(err)
	}
	var res int
	if err := p.Replica.Admin.QueryRow("SELECT MASTER_GTID_WAIT(?, 30)", pos).Scan(&res); err != nil || res != 0 {
		tb.Fatalf("replica reaching %s: got %d, %v; want 0", pos, res, err)
	}
}

// waitRunning waits up to 30 s until both replication threads of the replica run.
func (p *ReplicaPair) waitRunning(tb testing.TB) {
	tb.Helper()
	var status map[string]string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		status = slaveStatus(tb, p.Replica.Admin)
		if status["Slave_IO_Running"] == "Yes" && status["Slave_SQL_Running"] == "Yes" {
			return
		}
	}
	tb.Fatalf("replication does not run: %v", status)
}

// slaveStatus returns SHOW SLAVE STATUS as a map of column to value.
func slaveStatus(tb testing.TB, db *sql.DB) map[string]string {
	tb.Helper()
	rows, err := db.Query("SHOW SLAVE STATUS")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	out := map[string]string{}
	if !rows.Next() {
		return out
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		tb.Fatal(err)
	}
	for i, c := range cols {
		out[c] = vals[i].String
	}
	return out
}
