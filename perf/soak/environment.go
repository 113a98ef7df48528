package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"petstore/testkit/mariadbd"
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
