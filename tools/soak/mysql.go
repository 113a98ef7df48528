package main

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// How MariaDB is run on this machine.
const (
	mariadbd      = "/usr/sbin/mariadbd"
	mariadbPIDDir = "/run/mysqld"
	mariadbPID    = mariadbPIDDir + "/mysqld.pid"
)

// mariadbTimeout bounds MariaDB's shutdown and its start until it answers.
const mariadbTimeout = 2 * time.Minute

// openMySQL opens the MySQL server at 127.0.0.1:3306 as root, in database name ("" for none).
func openMySQL(name string) (*sql.DB, error) {
	cfg := mysqldriver.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", "127.0.0.1:3306", name
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 30*time.Second, 30*time.Second
	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// execMySQL runs statements in order outside any database.
func execMySQL(ctx context.Context, statements ...string) error {
	db, err := openMySQL("")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range statements {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// resetDatabase drops and creates the run's database.
func resetDatabase(ctx context.Context) error {
	return execMySQL(ctx, "DROP DATABASE IF EXISTS "+dbName,
		"CREATE DATABASE "+dbName+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
}

// dropDatabase drops the run's database.
func dropDatabase(ctx context.Context) error {
	return execMySQL(ctx, "DROP DATABASE IF EXISTS "+dbName)
}

// storedPets returns the ids of the stored pets by name.
func storedPets(ctx context.Context) (map[string][]int64, error) {
	db, err := openMySQL(dbName)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT id, name FROM pets ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byName := map[string][]int64{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		byName[name] = append(byName[name], id)
	}
	return byName, rows.Err()
}

// otherClients returns the databases of the other sessions connected to MariaDB: they will
// see the restart too.
func otherClients(ctx context.Context) ([]string, error) {
	db, err := openMySQL("")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT COALESCE(db, '(none)'), COUNT(*) FROM information_schema.processlist
		WHERE id <> CONNECTION_ID() AND COALESCE(db, '') <> ? AND user <> 'system user' GROUP BY db`, dbName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s (%d)", name, n))
	}
	return out, rows.Err()
}

// mariadb stops and starts the machine's MariaDB, and remembers to start it again.
type mariadb struct {
	mu   sync.Mutex
	down bool // stopped by this program and not yet answering again
	pid  int  // the process stopped
}

// stop sends SIGTERM to the running mariadbd and waits for it to exit.
func (m *mariadb) stop(ctx context.Context) error {
	pid, err := mariadbdPID()
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.down, m.pid = true, pid
	m.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM to mariadbd %d: %w", pid, err)
	}
	return waitExit(ctx, pid, mariadbTimeout)
}

// start starts mariadbd as the machine does and waits until it answers.
func (m *mariadb) start(ctx context.Context) error {
	if err := os.MkdirAll(mariadbPIDDir, 0o755); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "chown", "mysql:mysql", mariadbPIDDir).CombinedOutput(); err != nil {
		return fmt.Errorf("chown %s: %w: %s", mariadbPIDDir, err, out)
	}
	out, err := exec.CommandContext(ctx, "start-stop-daemon", "--start", "--oknodo", "--background", "--exec", mariadbd).CombinedOutput()
	if err != nil {
		return fmt.Errorf("start-stop-daemon: %w: %s", err, out)
	}
	if err := waitAnswering(ctx, mariadbTimeout); err != nil {
		return err
	}
	m.mu.Lock()
	m.down = false
	m.mu.Unlock()
	return nil
}

// restore starts MariaDB again if this program stopped it and it does not answer yet: after
// the stopped process has exited, so that start-stop-daemon does not take it for running.
func (m *mariadb) restore() {
	m.mu.Lock()
	down, pid := m.down, m.pid
	m.mu.Unlock()
	if !down {
		return
	}
	ctx := context.Background()
	if err := waitExit(ctx, pid, mariadbTimeout); err != nil {
		log.Printf("restoring MariaDB: %v", err)
	}
	log.Print("restoring MariaDB")
	if err := m.start(ctx); err != nil {
		log.Printf("MariaDB could not be started again: %v; start it with: start-stop-daemon --start --oknodo --background --exec %s", err, mariadbd)
	}
}

// mariadbdPID returns the pid in MariaDB's pid file, after checking that it is a mariadbd.
func mariadbdPID() (int, error) {
	b, err := os.ReadFile(mariadbPID)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", mariadbPID, err)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || strings.TrimSpace(string(comm)) != "mariadbd" {
		return 0, fmt.Errorf("%s names pid %d, which is not a running mariadbd", mariadbPID, pid)
	}
	return pid, nil
}

// waitExit waits until process pid has exited (or is a zombie), for at most timeout.
func waitExit(ctx context.Context, pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d still runs after %v", pid, timeout)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "PID (comm) S ...".
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// waitAnswering waits until MariaDB answers a query on a new connection, for at most timeout.
func waitAnswering(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := answering(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("MariaDB does not answer after %v: %w", timeout, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// answering runs SELECT 1 on a new connection.
func answering(ctx context.Context) error {
	db, err := openMySQL("")
	if err != nil {
		return err
	}
	defer db.Close()
	var one int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// sleep waits for d, or returns ctx's error when ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
