// Package store opens the database named by PETSTORE_DB (embedded SQLite or MySQL/MariaDB)
// with GORM, sizes its connection pool and applies the embedded migrations.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"petstore/internal/dblock"
	"petstore/migrations"
	"petstore/secret"
)

// Pool sizes the connection pool of a MySQL database. SQLite always uses one connection, so
// that writers never contend for its lock.
type Pool struct {
	// MaxOpen bounds the open connections of one instance. MariaDB allows 151 connections by
	// default: the default of 16 lets eight instances share a server with room to spare.
	MaxOpen int
	// MaxIdle bounds the idle connections kept for reuse.
	MaxIdle int
	// MaxLifetime recycles connections well before MySQL's wait_timeout (8 hours by default)
	// and the idle cut-offs of proxies and load balancers in between.
	MaxLifetime time.Duration
	// MaxIdleTime closes connections idle for this long.
	MaxIdleTime time.Duration
}

// DefaultTimeout is the longest one statement may take unless PETSTORE_DB_TIMEOUT says
// otherwise: a database that does not answer within it makes the request fail with 503
// unavailable instead of hanging. Every package that runs statements takes its timeout from
// the configuration, whose default this is.
const DefaultTimeout = 5 * time.Second

// DefaultPool is the pool used when no setting overrides it.
var DefaultPool = Pool{MaxOpen: 16, MaxIdle: 16, MaxLifetime: 5 * time.Minute, MaxIdleTime: time.Minute}

// DB is an open database: the GORM handle of the primary, its dialect and its read replicas.
type DB struct {
	*gorm.DB
	Dialect  string    // migrations.MySQL or migrations.SQLite
	Replicas *Replicas // nil: every read goes to the primary; closed with DB
	open     Opener    // opens the connection pools of DB and its replicas; nil: sql.Open
	// Galera is set when the server is a node of a Galera cluster (MariaDB Galera Cluster,
	// Percona XtraDB Cluster: wsrep_on), whose inserts and listing need more care (see
	// pets.New).
	Galera bool
	// Settler knows which pet ids a cursor may pass (MySQL; nil on SQLite, whose one
	// connection commits every write before a page is read).
	Settler *Settler
	timeout time.Duration // of a statement: DefaultTimeout unless WithTimeout
}

// Open connects to the database that dsn names, `sqlite:PATH` or
// `mysql://USER:PASS@HOST:PORT/DBNAME[?PARAMS]`, and checks that it answers.
func Open(ctx context.Context, dsn string, pool Pool, opts ...Option) (*DB, error) {
	db := &DB{timeout: DefaultTimeout}
	for _, o := range opts {
		o(db)
	}
	dialector, dialect, err := dialectorFor(dsn)
	if err == nil {
		dialector, err = withConn(dialector, db.open)
	}
	if err != nil {
		return nil, err
	}
	gdb, err := gorm.Open(dialector, gormConfig())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dialect, err)
	}
	db.DB, db.Dialect = gdb, dialect
	if dialect == migrations.SQLite {
		pool = Pool{MaxOpen: 1, MaxIdle: 1}
	}
	sizePool(db.SQL(), pool)
	if err := db.Ping(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: %s does not answer: %w", dialect, err)
	}
	if dialect == migrations.MySQL {
		if err := db.detect(ctx); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("store: %s: %w", dialect, err)
		}
		if db.Galera && !hasParam(dsn, causalParam) {
			_ = db.Close()
			return Open(ctx, withParam(dsn, causalParam, "1"), pool, opts...)
		}
	}
	return db, nil
}

// causalParam is the session variable that makes a Galera node's reads causal: with 1, a read
// first waits until the node has applied every write the cluster committed before it, so that
// a pet created through one node is found at once through another, for a fraction of a
// millisecond a read. Open sets it on every connection to a Galera node unless PETSTORE_DB
// sets it (to 0, say, for the node's own, possibly stale, view).
const causalParam = "wsrep_sync_wait"

// hasParam reports whether the query of the address dsn names the parameter name.
func hasParam(dsn, name string) bool {
	_, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return false
	}
	for _, kv := range strings.Split(query, "&") {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			return true
		}
	}
	return false
}

// withParam returns the address dsn with the parameter name=value added to its query.
func withParam(dsn, name, value string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + name + "=" + value
}

// detect finds out whether the MySQL server is a Galera node and whether its ids come in
// steps of one (auto_increment_increment), and sets up the Settler accordingly.
func (db *DB) detect(ctx context.Context) error {
	var err error
	if db.Galera, err = dblock.NodeLocal(ctx, db.SQL()); err != nil {
		return err
	}
	var step int64
	if err := db.SQL().QueryRowContext(ctx, "SELECT @@auto_increment_increment").Scan(&step); err != nil {
		return err
	}
	db.Settler = newSettler(db.SQL(), db.timeout, !db.Galera && step == 1)
	return nil
}

// gormConfig is the GORM configuration of every database handle.
func gormConfig() *gorm.Config {
	return &gorm.Config{
		SkipDefaultTransaction: true, // every write is one statement
		PrepareStmt:            true, // one round trip per query once warm
		TranslateError:         true,
		Logger:                 logger.Discard,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	}
}

// sizePool applies pool to db.
func sizePool(db *sql.DB, pool Pool) {
	db.SetMaxOpenConns(pool.MaxOpen)
	db.SetMaxIdleConns(pool.MaxIdle)
	db.SetConnMaxLifetime(pool.MaxLifetime)
	db.SetConnMaxIdleTime(pool.MaxIdleTime)
}

// Migrate applies the pending migrations and returns how many it applied.
func (db *DB) Migrate(ctx context.Context) (int, error) {
	sqlDB, err := db.DB.DB()
	if err != nil {
		return 0, err
	}
	return migrations.Apply(ctx, sqlDB, db.Dialect)
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	sqlDB, err := db.DB.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Ready checks that the database answers and, on a Galera node, that the node serves
// statements (wsrep_ready: it is part of the cluster's primary component and synced enough to
// accept queries); a node cut off from the others, or still joining, answers a ping but refuses
// every query.
func (db *DB) Ready(ctx context.Context) error {
	if !db.Galera {
		return db.Ping(ctx)
	}
	var name, value string
	if err := db.SQL().QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_ready'").Scan(&name, &value); err != nil {
		return err
	}
	if !strings.EqualFold(value, "ON") {
		return errors.New("store: the Galera node is not ready (wsrep_ready is " + value + ")")
	}
	return nil
}

// SQL returns the underlying database/sql handle.
func (db *DB) SQL() *sql.DB {
	sqlDB, _ := db.DB.DB()
	return sqlDB
}

// Close closes the connection pool, and the replicas'.
func (db *DB) Close() error {
	err := db.SQL().Close()
	if db.Replicas != nil {
		err = errors.Join(err, db.Replicas.Close())
	}
	return err
}

// dialectorFor parses dsn into a GORM dialector.
func dialectorFor(dsn string) (gorm.Dialector, string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" {
			return nil, "", errors.New("store: sqlite:PATH needs a path")
		}
		// WAL lets readers go on while a write commits; busy_timeout waits out other processes
		// (the keys command) instead of failing at once.
		return sqlite.Open(path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"), migrations.SQLite, nil
	case strings.HasPrefix(dsn, "mysql://"):
		cfg, err := mysqlConfig(dsn)
		if err != nil {
			return nil, "", err
		}
		return mysql.New(mysql.Config{DSNConfig: cfg}), migrations.MySQL, nil
	}
	return nil, "", errors.New("store: the database must be sqlite:PATH or mysql://USER:PASS@HOST:PORT/DBNAME")
}

// mysqlConfig turns mysql://USER:PASS@HOST:PORT/DBNAME?PARAMS into a driver configuration. The
// connection charset is utf8mb4 (full Unicode) and times are UTC unless PARAMS say otherwise.
func mysqlConfig(dsn string) (*mysqldriver.Config, error) {
	u, err := secret.ParseURL(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: the MySQL address %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if u.Host == "" || name == "" || strings.Contains(name, "/") {
		return nil, errors.New("store: the MySQL address must be mysql://USER:PASS@HOST:PORT/DBNAME")
	}
	q := u.Query()
	for k, v := range map[string]string{"charset": "utf8mb4", "parseTime": "true", "loc": "UTC", "timeout": "5s", "readTimeout": "30s", "writeTimeout": "30s"} {
		if !q.Has(k) {
			q.Set(k, v)
		}
	}
	cfg, err := mysqldriver.ParseDSN("tcp(" + u.Host + ")/" + name + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: bad MySQL parameters: %w", err)
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	return cfg, nil
}
