// Package config reads the service's settings, once, from the environment and from flags of
// the same names (PETSTORE_DB_MAX_OPEN and --db-max-open); a flag wins over its variable.
// No other package reads the environment.
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

	"petstore/auth"
	"petstore/clientaddr"
	"petstore/graph"
	"petstore/idempotency"
	"petstore/live/conns"
	"petstore/ratelimit"
	"petstore/secret"
	"petstore/store"
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
	Env                string        // development, staging or production
	PublicURL          string        // production base address, ending in /v1
	StagingURL         string        // staging base address, ending in /v1
	ContactEmail       string        // email address of the API's support, the OpenAPI document's info.contact
	ContactURL         string        // web page of the API's support, in info.contact with the email; empty: none
	Pool               store.Pool    // MySQL connection pool
	DBTimeout          time.Duration // how long one database statement may take before the request fails with 503
	KeyCacheTTL        time.Duration // how long a key lookup is trusted: the bound on revocation
	DrainDelay         time.Duration // how long SIGTERM keeps serving, /readyz answering 503, before draining
	ShutdownTimeout    time.Duration // how long SIGTERM waits for in-flight requests
	HeaderTimeout      time.Duration // how long a client may take to send the request headers
	BodyTimeout        time.Duration // how long a client may take to send the whole request
	WSPingInterval     time.Duration // how often every WebSocket is pinged; three without an answer close it
	WSPendingPerAddr   int           // WebSockets without a valid key in their upgrade that one client address may hold before connection_init
	WSPendingMax       int           // the same on the instance, whatever their addresses; 0: sized from memory (conns.CapacityFor)
	LiveConnectionsMax int           // WebSockets and SSE streams the instance holds; 0: sized from memory (conns.CapacityFor)
	LogLevel           slog.Level    // debug, info, warn or error
	CORSOrigins        []string      // browser origins allowed to call the API; none by default
	TrustedProxies     []string      // proxies whose X-Forwarded-For is believed (clientaddr); none by default
	IdempotencyTTL     time.Duration // how long an Idempotency-Key's answer is kept (at least 24 h)
	APQTTL             time.Duration // how long a persisted GraphQL query stays in Redis after its last use
	DevKeyPlan         string        // development: the plan of the key made on the first start
	PageCacheBytes     int           // most bytes of settled pages kept in memory (pets.PageCache); 0: off
	GraphQL            graph.Options
	RateLimit          ratelimit.Config
	Webhooks           Webhooks
	Tracing            bool // OpenTelemetry traces: set from the OTEL_* variables by Parse (TracingFromEnv), not by a flag
}

// The values of PETSTORE_MIGRATE.
const (
	MigrateAuto = "auto" // serve and keys apply pending migrations first
	MigrateOff  = "off"  // they change no schema, and stop when a migration is pending
)

// DefaultDrainDelay is the drain delay outside development: a balancer that checks /readyz
// every second or two has marked the instance down well within it. Development has none, so
// that Ctrl-C stops `make run` at once.
const DefaultDrainDelay = 5 * time.Second

// DefaultPageCacheBytes is the default bound of the page cache: some 25,000 pets, in pages
// of any size, within the memory the service is measured in.
const DefaultPageCacheBytes = 2 << 20

// Default returns the settings used where neither a variable nor a flag says otherwise.
func Default() Config {
	return Config{
		Addr:             ":8080",
		DB:               "sqlite:petstore.db",
		Migrate:          MigrateAuto,
		Env:              "development",
		PublicURL:        "https://api.petstore.example/v1",
		StagingURL:       "https://staging.api.petstore.example/v1",
		ContactEmail:     "api@petstore.example",
		Pool:             store.DefaultPool,
		DBTimeout:        store.DefaultTimeout,
		KeyCacheTTL:      auth.DefaultCacheTTL,
		DrainDelay:       DefaultDrainDelay,
		ShutdownTimeout:  20 * time.Second,
		HeaderTimeout:    5 * time.Second,
		BodyTimeout:      30 * time.Second,
		WSPingInterval:   conns.DefaultPingEvery,
		WSPendingPerAddr: conns.DefaultPendingPerAddr,
		LogLevel:         slog.LevelInfo,
		IdempotencyTTL:   24 * time.Hour,
		APQTTL:           24 * time.Hour,
		DevKeyPlan:       auth.Pro.Name, // a working day of playground and scripts, and still a plan with limits
		PageCacheBytes:   DefaultPageCacheBytes,
		GraphQL:          graph.DefaultOptions(),
		RateLimit:        ratelimit.DefaultConfig(),
		Webhooks:         defaultWebhooks(),
	}
}

// Validate reports the first setting that cannot work. Parse calls it: every setting is checked
// here, before the service opens, migrates or changes anything.
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
	if err := c.Idempotency().Validate(); err != nil {
		return fmt.Errorf("PETSTORE_IDEMPOTENCY_TTL: %w", err)
	}
	if err := c.RateLimit.Validate(); err != nil {
		return fmt.Errorf("rate limits: %w", err)
	}
	if _, err := c.Proxies(); err != nil {
		return fmt.Errorf("PETSTORE_TRUSTED_PROXIES: %w", err)
	}
	switch c.DevKeyPlan {
	case auth.Free.Name, auth.Pro.Name, auth.Business.Name:
	default:
		return fmt.Errorf("PETSTORE_DEV_KEY_PLAN must be free, pro or business; got %q", c.DevKeyPlan)
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

// Proxies returns the trusted proxies of PETSTORE_TRUSTED_PROXIES (Validate checks them).
func (c Config) Proxies() (clientaddr.Proxies, error) {
	return clientaddr.ParseProxies(c.TrustedProxies)
}

// Idempotency returns the settings of the Idempotency-Key records.
func (c Config) Idempotency() idempotency.Config {
	ic := idempotency.DefaultConfig()
	ic.TTL, ic.QueryTimeout = c.IdempotencyTTL, c.DBTimeout
	return ic
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

// KeyPrefix returns the prefix of the keys this environment issues and accepts.
func (c Config) KeyPrefix() string { return auth.PrefixFor(c.Env) }

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
