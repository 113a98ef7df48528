package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"petstore/migrations"
	"petstore/store"
)

// benchKeyLimit is the per-minute and per-day limit of the bench's enterprise keys: no run
// comes near it.
const benchKeyLimit = "1000000000000"

// seedBatch is the number of rows per INSERT when seeding.
const seedBatch = 1000

// dataset is one seeded database and what the workloads need of it.
type dataset struct {
	dsn          string
	key          string // an enterprise API key with benchKeyLimit
	minID, maxID int64  // the seeded pets' ids
}

// repoRoot returns the folder of the petstore module's go.mod, from the working directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module petstore\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the bench inside the petstore repository")
		}
		dir = parent
	}
}

// build compiles the service and the two comparison servers into dir, each read from disk
// when it starts (evict).
func build(ctx context.Context, root, dir string, log io.Writer) (bins map[string]string, err error) {
	bins = map[string]string{}
	// The service from its module at root; the comparison servers from the perf module.
	for name, pkg := range map[string][2]string{"service": {".", "."}, "direct": {"perf", "./bench/direct"}, "raw": {"perf", "./bench/raw"}} {
		bins[name] = filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bins[name], pkg[1])
		cmd.Dir, cmd.Stdout, cmd.Stderr = filepath.Join(root, pkg[0]), log, log
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go build %s: %w", pkg[1], err)
		}
		if err := evict(bins[name]); err != nil {
			return nil, fmt.Errorf("%s: %w", bins[name], err)
		}
	}
	return bins, nil
}

// mysqlName matches the database names the bench creates and drops.
var mysqlName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// resetMySQL drops and creates the database that dsn (mysql://USER:PASS@HOST:PORT/NAME) names.
func resetMySQL(ctx context.Context, dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme != "mysql" {
		return fmt.Errorf("-mysql must be mysql://USER:PASS@HOST:PORT/DBNAME; got %q", dsn)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if !mysqlName.MatchString(name) {
		return fmt.Errorf("the bench database name must be letters, digits and _; got %q", name)
	}
	cfg := mysqldriver.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = u.User.Username(), "tcp", u.Host
	cfg.Passwd, _ = u.User.Password()
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{
		"DROP DATABASE IF EXISTS `" + name + "`",
		"CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("MySQL at %s: %w", u.Host, err)
		}
	}
	return nil
}

// siblingDB returns the MySQL dsn with suffix appended to its database name.
func siblingDB(dsn, suffix string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("-mysql: %w", err)
	}
	u.Path += suffix
	return u.String(), nil
}

// seed applies the migrations to the database at dsn, inserts rows pets with multi-row
// INSERTs (names partly non-ASCII; statuses available, pending, sold and none in turn) and
// returns the range of their ids.
func seed(ctx context.Context, dsn string, rows int) (minID, maxID int64, err error) {
	db, err := store.Open(ctx, dsn, store.DefaultPool)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return 0, 0, err
	}
	sqlDB := db.SQL()
	if err := insertPets(ctx, sqlDB, rows); err != nil {
		return 0, 0, fmt.Errorf("seed: %w", err)
	}
	if db.Dialect == migrations.MySQL {
		if _, err := sqlDB.ExecContext(ctx, "ANALYZE TABLE pets"); err != nil {
			return 0, 0, err
		}
	}
	err = sqlDB.QueryRowContext(ctx, "SELECT MIN(id), MAX(id) FROM pets").Scan(&minID, &maxID)
	return minID, maxID, err
}

// insertPets inserts rows pets in one transaction.
func insertPets(ctx context.Context, db *sql.DB, rows int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	names := []string{"Rex", "Luna", "Mía", "Félix", "Śnieżka", "小虎", "Max", "Bella"}
	statuses := []any{"available", "pending", "sold", nil}
	for start := 0; start < rows; start += seedBatch {
		n := min(seedBatch, rows-start)
		args := make([]any, 0, 3*n)
		for i := start; i < start+n; i++ {
			args = append(args, fmt.Sprintf("%s %d", names[i%len(names)], i+1), i%50+1, statuses[i%len(statuses)])
		}
		q := "INSERT INTO pets (name, category_id, status) VALUES " + strings.Repeat("(?, ?, ?), ", n-1) + "(?, ?, ?)"
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// createKey runs `petstore keys create` for an enterprise key on the database at dsn and
// returns the key, the last line it prints.
func createKey(ctx context.Context, bin, dsn string, log io.Writer) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "keys", "create", "--plan", "enterprise",
		"--per-minute", benchKeyLimit, "--per-day", benchKeyLimit, "--name", "bench")
	cmd.Env = serviceEnv(map[string]string{"PETSTORE_DB": dsn, "PETSTORE_LOG_LEVEL": "warn"})
	cmd.Stderr = log
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("petstore keys create: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// serviceEnv returns this process's environment without any PETSTORE_ setting, plus vars.
func serviceEnv(vars map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PETSTORE_") {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// prepare seeds the database at dsn anew (dropping it first on MySQL) and creates its key.
func prepare(ctx context.Context, bin, dsn string, rows int, log io.Writer) (dataset, error) {
	if strings.HasPrefix(dsn, "mysql://") {
		if err := resetMySQL(ctx, dsn); err != nil {
			return dataset{}, err
		}
	}
	d := dataset{dsn: dsn}
	var err error
	if d.minID, d.maxID, err = seed(ctx, dsn, rows); err != nil {
		return d, err
	}
	d.key, err = createKey(ctx, bin, dsn, log)
	return d, err
}

// pingRedis checks that the Redis at u answers, so that the shared-limiter row does not
// silently measure the limiter failing open.
func pingRedis(ctx context.Context, u string) error {
	opts, err := redis.ParseURL(u)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("Redis at %s does not answer: %w", opts.Addr, err)
	}
	return nil
}
