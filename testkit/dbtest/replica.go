package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the admin connections

	"petstore/store"
	"petstore/testkit/mariadbd"
)

// ReplicaPair is a primary mariadbd and a replica of it, of one test's own: their own data
// directories and ports, GTID replication, stopped when the test ends. The machine's own
// MariaDB is never touched.
type ReplicaPair struct {
	Primary, Replica *Server
}

// Server is one mariadbd that a test started, with a connection to it.
type Server struct {
	*mariadbd.Server
	Admin *sql.DB // root, no database
}

// Replicated returns a fresh, migrated database on a primary of tb's own with one replica of it
// attached as db.Replicas (already serving reads), and the pair, so that the test can pause
// replication or stop the replica. Where services are required (CI), a server that cannot
// start fails tb; elsewhere it skips it.
func Replicated(tb testing.TB) (*store.DB, *ReplicaPair) {
	tb.Helper()
	pair := StartReplicaPair(tb)
	db := pair.Migrated(tb)
	var err error
	if db.Replicas, err = store.OpenReplicas(context.Background(), db, []string{pair.Replica.DSN("petstore")}, store.DefaultPool); err != nil {
		tb.Fatal(err)
	}
	WaitReady(tb, db.Replicas, 1)
	return db, pair
}

// Migrated returns a fresh, migrated database petstore on the primary, once the replica has
// applied it, without replicas attached.
func (p *ReplicaPair) Migrated(tb testing.TB) *store.DB {
	tb.Helper()
	ctx := context.Background()
	p.Primary.Exec(tb, "CREATE DATABASE petstore CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	db, err := store.Open(ctx, p.Primary.DSN("petstore"), store.DefaultPool)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	p.WaitApplied(tb)
	return db
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

// StartMariaDB starts a lone mariadbd of tb's own (a fresh data directory, a free port, root
// without a password), stopped when tb ends. Where services are required (CI), a server that
// cannot start fails tb; elsewhere it skips it.
func StartMariaDB(tb testing.TB) *Server {
	tb.Helper()
	bin, base := installMariaDB(tb)
	return startServer(tb, mariadbd.Config{Binary: bin, Dir: filepath.Join(base, "p")})
}

// installMariaDB returns the path of mariadbd and a temporary directory, removed when tb ends,
// holding a fresh data directory "p".
func installMariaDB(tb testing.TB) (bin, base string) {
	tb.Helper()
	bin, err := mariadbd.Binary()
	if err != nil {
		Missing(tb, "mariadbd (apt-get install mariadb-server)", err)
	}
	base, err = os.MkdirTemp("", "petstore-mdb-") // short: a socket path holds at most 107 bytes
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := mariadbd.Install(filepath.Join(base, "p")); err != nil {
		Unreachable(tb, "mariadb-install-db", err)
	}
	return bin, base
}

// StartReplicaPair starts a primary and a replica that replicates from it with GTIDs.
func StartReplicaPair(tb testing.TB) *ReplicaPair {
	tb.Helper()
	bin, base := installMariaDB(tb)
	if err := os.CopyFS(filepath.Join(base, "r"), os.DirFS(filepath.Join(base, "p"))); err != nil {
		tb.Fatal(err)
	}
	pair := &ReplicaPair{
		Primary: startServer(tb, mariadbd.Config{Binary: bin, Dir: filepath.Join(base, "p"), ServerID: 1}),
		Replica: startServer(tb, mariadbd.Config{Binary: bin, Dir: filepath.Join(base, "r"), ServerID: 2, Extra: []string{"--read-only=1"}}),
	}
	pair.Replica.Exec(tb, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', "+
		"MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1", pair.Primary.Port))
	pair.Replica.Exec(tb, "START SLAVE")
	pair.waitRunning(tb)
	return pair
}

// startServer starts mariadbd as cfg says, on a free port, stopped when tb ends.
func startServer(tb testing.TB, cfg mariadbd.Config) *Server {
	tb.Helper()
	s, err := mariadbd.Launch(context.Background(), cfg)
	if err != nil {
		Unreachable(tb, "a test mariadbd", err)
	}
	admin, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?timeout=2s", s.Port))
	if err != nil {
		_ = s.Stop()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = admin.Close()
		_ = s.Stop()
	})
	return &Server{Server: s, Admin: admin}
}

// Exec runs query on s as root.
func (s *Server) Exec(tb testing.TB, query string, args ...any) {
	tb.Helper()
	if _, err := s.Admin.Exec(query, args...); err != nil {
		tb.Fatalf("%s: %v", query, err)
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
