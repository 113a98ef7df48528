package mariadbd_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"petstore/testkit/dbtest"
	"petstore/testkit/mariadbd"
)

// TestStopStart stops a server of the test's own and starts it again: same port, same data,
// another process, and nothing answers in between.
func TestStopStart(t *testing.T) {
	bin, err := mariadbd.Binary()
	if err != nil {
		dbtest.Unreachable(t, "mariadbd", err)
	}
	base, err := os.MkdirTemp("", "petstore-mdb-") // short: a socket path holds at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	dir := filepath.Join(base, "d")
	if err := mariadbd.Install(dir); err != nil {
		dbtest.Unreachable(t, "mariadb-install-db", err)
	}
	ctx := context.Background()
	s, err := mariadbd.Launch(ctx, mariadbd.Config{Binary: bin, Dir: dir})
	if err != nil {
		dbtest.Unreachable(t, "a test mariadbd", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?timeout=2s", s.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE kept"); err != nil {
		t.Fatal(err)
	}
	port, pid := s.Port, s.Pid()

	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if s.Pid() != 0 || alive(pid) {
		t.Errorf("after Stop: Pid() %d, process %d alive %t", s.Pid(), pid, alive(pid))
	}
	if err := db.Ping(); err == nil {
		t.Error("the stopped server answers")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}

	if err := s.Start(ctx); err != nil {
		t.Fatalf("start again: %v", err)
	}
	if s.Port != port || s.Pid() == 0 || s.Pid() == pid {
		t.Errorf("started again on port %d as pid %d; was port %d, pid %d", s.Port, s.Pid(), port, pid)
	}
	var name string
	if err := db.QueryRow("SHOW DATABASES LIKE 'kept'").Scan(&name); err != nil {
		t.Errorf("the database created before the restart: %v", err)
	}
}

// alive reports whether process pid exists (Stop has reaped the server it stopped).
func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
