// Package config reads the service's settings, once, from the environment and from flags of
// the same names (PETSTORE_DB_MAX_OPEN and --db-max-open); a flag wins over its variable.
// No other package reads the environment.
//
// Settings are values (addresses, durations, sizes, modes), checked here before the service
// opens anything. The package imports no part of the service: app gives the defaults (most of
// them the parts' own), checks the rules a part owns, and builds each part's options from these
// values.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"petstore/secret"
)

// Config is every setting of the service.
type Config struct {
	Addr               string        // listen address
	DebugAddr          string        // listen address of the profiling endpoints (/debug/pprof/); empty: none
	MetricsAddr        string        // listen address of GET /metrics, then off the API's listener; empty: on the API's listener
	DB                 string        // sqlite:PATH or mysql://USER:PASS@HOST:PORT/DBNAME[?PARAMS]
	Migrate            string        // MigrateAuto or MigrateOff: whether serve and keys apply pending migrations
	Replicas           []string      // mysql:// addresses of read replicas of DB (MariaDB, GTID replication); none by default
	RedisURL           string        // one server, a cluster or a Sentinel primary (see RedisTarget); empty keeps rate-limit state in the process
	RedisKeyPrefix     string        // starts every key the service writes in Redis; not a setting (no variable): tests sharing a Redis take one each
	Env                string        // development, staging or production
	PublicURL          string        // production base address, ending in /v1
	StagingURL         string        // staging base address, ending in /v1
	ContactEmail       string        // email address of the API's support, the OpenAPI document's info.contact
	ContactURL         string        // web page of the API's support, in info.contact with the email; empty: none
	Pool               Pool          // MySQL connection pool
	DBTimeout          time.Duration // how long one database statement may take before the request fails with 503
	KeyCacheTTL        time.Duration // how long a key lookup is trusted: the bound on revocation
	DrainDelay         time.Duration // how long SIGTERM keeps serving, /readyz answering 503, before draining
	ShutdownTimeout    time.Duration // how long SIGTERM waits for in-flight requests
	HeaderTimeout      time.Duration // how long a client may take to send the request headers
	BodyTimeout        time.Duration // how long a client may take to send the whole request
	WSPingInterval     time.Duration // how often every WebSocket is pinged; three without an answer close it
	WSPendingPerAddr   int           // WebSockets without a valid key in their upgrade that one client address may hold before connection_init
	WSPendingMax       int           // the same on the instance, whatever their addresses; 0: sized from memory
	LiveConnectionsMax int           // WebSockets and SSE streams the instance holds; 0: sized from memory
	LogLevel           slog.Level    // debug, info, warn or error
	CORSOrigins        []string      // browser origins allowed to call the API; none by default
	TrustedProxies     []string      // proxies (addresses or CIDRs) whose X-Forwarded-For is believed; none by default
	IdempotencyTTL     time.Duration // how long an Idempotency-Key's answer is kept (at least 24 h)
	APQTTL             time.Duration // how long a persisted GraphQL query stays in Redis after its last use
	DevKeyPlan         string        // development: the plan of the key made on the first start
	PageCacheBytes     int           // most bytes of settled pages kept in memory; 0: off
	GraphQL            GraphQLSettings
	RateLimit          RateLimit
	Webhooks           Webhooks
	Tracing            bool // OpenTelemetry traces: set from the OTEL_* variables by Parse (TracingFromEnv), not by a flag
}

// The values of PETSTORE_MIGRATE.
const (
	MigrateAuto = "auto" // serve and keys apply pending migrations first
	MigrateOff  = "off"  // they change no schema, and stop when a migration is pending
)

// Pool is the MySQL connection pool: most connections open and idle, and how long one lives
// and may stay idle.
type Pool struct {
	MaxOpen     int
	MaxIdle     int
	MaxLifetime time.Duration
	MaxIdleTime time.Duration
}

// GraphQLSettings are the GraphQL handler's: which documents run (one of DocumentsModes), and
// the cost limits and the parsed-documents cache size; a negative limit or size turns it off,
// 0 keeps its default.
type GraphQLSettings struct {
	DocumentsMode   string
	ComplexityLimit int
	DepthLimit      int
	TokenLimit      int
	QueryCacheSize  int
}

// DocumentsModes are the values of PETSTORE_DOCUMENTS.
var DocumentsModes = []string{"any", "listed", "ids"}

// RateLimit are the rate limiter's settings: the anonymous budgets, the suspension of a
// subject refused too often, and the policy when Redis fails.
type RateLimit struct {
	AnonymousPerMinute int64
	AnonymousPerDay    int64
	SuspendAfter       int64
	SuspendWindow      time.Duration
	SuspendBase        time.Duration
	SuspendMax         time.Duration
	FailOpen           bool
}

// Validate reports the first setting that cannot work. Parse calls it, before the service
// opens, migrates or changes anything; the rules a part owns (the rate limiter's, the
// idempotency records', the trusted proxies', the plans') are checked by app right after.
func (c Config) Validate() error {
	switch c.Env {
	case "development", "staging", "production":
	default:
		return fmt.Errorf("PETSTORE_ENV must be development, staging or production; got %q", c.Env)
	}
	for name, u := range map[string]string{"PETSTORE_PUBLIC_URL": c.PublicURL, "PETSTORE_STAGING_URL": c.StagingURL} {
		if !strings.HasSuffix(u, "/v1") {
			return fmt.Errorf("%s must end in /v1; got %q", name, u)
		}
	}
	if err := c.validateContact(); err != nil {
		return err
	}
	if c.Migrate != MigrateAuto && c.Migrate != MigrateOff {
		return fmt.Errorf("PETSTORE_MIGRATE must be auto or off; got %q", c.Migrate)
	}
	if c.Pool.MaxOpen < 1 || c.Pool.MaxIdle < 0 {
		return errors.New("PETSTORE_DB_MAX_OPEN must be at least 1 and PETSTORE_DB_MAX_IDLE at least 0")
	}
	if c.DrainDelay < 0 {
		return errors.New("PETSTORE_DRAIN_DELAY must not be negative")
	}
	if min(c.ShutdownTimeout, c.KeyCacheTTL, c.DBTimeout, c.HeaderTimeout, c.BodyTimeout) <= 0 {
		return errors.New("every timeout and PETSTORE_KEY_CACHE_TTL must be positive")
	}
	if c.WSPingInterval < time.Second { // shorter, pings would cost much and close slow peers
		return fmt.Errorf("PETSTORE_WS_PING_INTERVAL must be at least 1s; got %v", c.WSPingInterval)
	}
	if c.WSPendingPerAddr < 1 {
		return fmt.Errorf("PETSTORE_WS_PENDING_PER_ADDR must be at least 1; got %d", c.WSPendingPerAddr)
	}
	if c.WSPendingMax < 0 || c.LiveConnectionsMax < 0 {
		return errors.New("PETSTORE_WS_PENDING_MAX and PETSTORE_LIVE_CONNECTIONS_MAX must be 0 (sized from memory) or more")
	}
	if err := c.Webhooks.validate(); err != nil {
		return err
	}
	if len(c.Replicas) > 0 && !strings.HasPrefix(c.DB, "mysql://") {
		return errors.New("PETSTORE_DB_REPLICAS needs PETSTORE_DB to be a mysql:// address")
	}
	return c.validateAddresses()
}

// validateContact checks the contact of the OpenAPI document: an email address alone (no
// display name, no angle brackets), and an absolute http(s) URL when there is one.
func (c Config) validateContact() error {
	if a, err := mail.ParseAddress(c.ContactEmail); err != nil || a.Address != c.ContactEmail {
		return fmt.Errorf("PETSTORE_CONTACT_EMAIL must be an email address (e.g. api@petstore.example); got %q", c.ContactEmail)
	}
	if c.ContactURL == "" {
		return nil
	}
	if u, err := url.Parse(c.ContactURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("PETSTORE_CONTACT_URL must be an absolute http or https URL (e.g. https://petstore.example/support); got %q", c.ContactURL)
	}
	return nil
}

// validateAddresses checks that the directory of a SQLite database exists, and that the
// addresses that may carry a password parse with it in its place; the error never quotes them.
func (c Config) validateAddresses() error {
	if path, ok := strings.CutPrefix(c.DB, "sqlite:"); ok && path != "" {
		dir := filepath.Dir(path)
		if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("PETSTORE_DB: the directory %s does not exist", dir)
		} else if err == nil && !fi.IsDir() {
			return fmt.Errorf("PETSTORE_DB: %s is not a directory", dir)
		}
	}
	if strings.Contains(c.DB, "://") { // not sqlite:PATH
		if _, err := secret.ParseURL(c.DB); err != nil {
			return fmt.Errorf("PETSTORE_DB %w", err)
		}
	}
	if c.RedisURL != "" {
		if _, err := ParseRedisURL(c.RedisURL); err != nil {
			return err
		}
	}
	for i, r := range c.Replicas {
		if !strings.HasPrefix(r, "mysql://") {
			return fmt.Errorf("PETSTORE_DB_REPLICAS: address %d must be mysql://USER:PASS@HOST:PORT/DBNAME", i+1)
		}
		if _, err := secret.ParseURL(r); err != nil {
			return fmt.Errorf("PETSTORE_DB_REPLICAS: address %d %w", i+1, err)
		}
	}
	return nil
}

// maskAll returns addresses with their passwords masked.
func maskAll(addresses []string) []string {
	out := make([]string, len(addresses))
	for i, a := range addresses {
		out[i] = secret.Mask(a)
	}
	return out
}

// LogValue logs the settings with passwords masked, and durations as text ("5s"): slog's JSON
// handler writes a time.Duration as nanoseconds.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", c.Addr), slog.String("db", secret.Mask(c.DB)), slog.Any("db_replicas", maskAll(c.Replicas)), slog.String("redis", secret.Mask(c.RedisURL)),
		slog.String("migrate", c.Migrate), slog.String("env", c.Env), slog.String("public_url", c.PublicURL), slog.String("staging_url", c.StagingURL),
		slog.Int("db_max_open", c.Pool.MaxOpen), slog.String("db_timeout", c.DBTimeout.String()),
		slog.String("key_cache_ttl", c.KeyCacheTTL.String()), slog.String("drain_delay", c.DrainDelay.String()),
		slog.String("shutdown_timeout", c.ShutdownTimeout.String()), slog.Bool("tracing", c.Tracing),
		slog.Bool("ratelimit_fail_open", c.RateLimit.FailOpen), slog.Any("trusted_proxies", c.TrustedProxies), slog.Any("cors_origins", c.CORSOrigins),
	)
}
