// Package config reads the service's settings, once, from the environment and from flags of
// the same names (PETSTORE_DB_MAX_OPEN and --db-max-open); a flag wins over its variable.
// No other package reads the environment.
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"petstore/auth"
	"petstore/clientaddr"
	"petstore/graph"
	"petstore/idempotency"
	"petstore/live"
	"petstore/ratelimit"
	"petstore/secret"
	"petstore/store"
)

// Config is every setting of the service.
type Config struct {
	Addr             string        // listen address
	DebugAddr        string        // listen address of the profiling endpoints (/debug/pprof/); empty: none
	MetricsAddr      string        // listen address of GET /metrics, then off the API's listener; empty: on the API's listener
	DB               string        // sqlite:PATH or mysql://USER:PASS@HOST:PORT/DBNAME[?PARAMS]
	Replicas         []string      // mysql:// addresses of read replicas of DB (MariaDB, GTID replication); none by default
	RedisURL         string        // one server, a cluster or a Sentinel primary (see RedisTarget); empty keeps rate-limit state in the process
	Env              string        // development, staging or production
	PublicURL        string        // production base address, ending in /v1
	StagingURL       string        // staging base address, ending in /v1
	Pool             store.Pool    // MySQL connection pool
	DBTimeout        time.Duration // how long one database statement may take before the request fails with 503
	KeyCacheTTL      time.Duration // how long a key lookup is trusted: the bound on revocation
	DrainDelay       time.Duration // how long SIGTERM keeps serving, /readyz answering 503, before draining
	ShutdownTimeout  time.Duration // how long SIGTERM waits for in-flight requests
	HeaderTimeout    time.Duration // how long a client may take to send the request headers
	BodyTimeout      time.Duration // how long a client may take to send the whole request
	WSPingInterval   time.Duration // how often every WebSocket is pinged; three without an answer close it
	WSPendingPerAddr int           // WebSockets without a valid key in their upgrade that one client address may hold before connection_init
	LogLevel         slog.Level    // debug, info, warn or error
	CORSOrigins      []string      // browser origins allowed to call the API; none by default
	TrustedProxies   []string      // proxies whose X-Forwarded-For is believed (clientaddr); none by default
	IdempotencyTTL   time.Duration // how long an Idempotency-Key's answer is kept (at least 24 h)
	APQTTL           time.Duration // how long a persisted GraphQL query stays in Redis after its last use
	GraphQL          graph.Options
	RateLimit        ratelimit.Config
	Tracing          bool // OpenTelemetry traces: set from the OTEL_* variables by Parse (TracingFromEnv), not by a flag
}

// DefaultDrainDelay is the drain delay outside development: a balancer that checks /readyz
// every second or two has marked the instance down well within it. Development has none, so
// that Ctrl-C stops `make run` at once.
const DefaultDrainDelay = 5 * time.Second

// Default returns the settings used where neither a variable nor a flag says otherwise.
func Default() Config {
	return Config{
		Addr:             ":8080",
		DB:               "sqlite:petstore.db",
		Env:              "development",
		PublicURL:        "https://api.petstore.example/v1",
		StagingURL:       "https://staging.api.petstore.example/v1",
		Pool:             store.DefaultPool,
		DBTimeout:        store.DefaultTimeout,
		KeyCacheTTL:      auth.DefaultCacheTTL,
		DrainDelay:       DefaultDrainDelay,
		ShutdownTimeout:  20 * time.Second,
		HeaderTimeout:    5 * time.Second,
		BodyTimeout:      30 * time.Second,
		WSPingInterval:   live.DefaultPingEvery,
		WSPendingPerAddr: live.DefaultPendingPerAddr,
		LogLevel:         slog.LevelInfo,
		IdempotencyTTL:   24 * time.Hour,
		APQTTL:           24 * time.Hour,
		GraphQL:          graph.DefaultOptions(),
		RateLimit:        ratelimit.DefaultConfig(),
	}
}

// Register defines the flags of c on fs, with c's values as defaults. Each flag name maps to
// a variable: --db-max-open is PETSTORE_DB_MAX_OPEN.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address")
	fs.StringVar(&c.DebugAddr, "debug-addr", c.DebugAddr, "listen address of the Go profiling endpoints (/debug/pprof/), such as 127.0.0.1:6060; empty: none. Never expose it publicly")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "listen address of GET /metrics (Prometheus), such as :9090; the API's listener then answers /metrics with 404. Empty: /metrics on the API's listener")
	fs.StringVar(&c.DB, "db", c.DB, "database: sqlite:PATH or mysql://USER:PASS@HOST:PORT/DBNAME[?PARAMS]")
	listVar(fs, &c.Replicas, "db-replicas", "comma-separated mysql:// addresses of MariaDB read replicas of --db, which serve listings, getPet and key lookups when fresh")
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis for rate-limit state and persisted queries shared by every instance: redis://HOST:PORT/N (one server), redis://HOST:PORT?addr=HOST2:PORT2&addr=... (a cluster; cluster=true behind one address) or redis://SENTINEL:PORT?master_name=NAME (Sentinel); empty: in process")
	fs.StringVar(&c.Env, "env", c.Env, "development, staging or production")
	fs.StringVar(&c.PublicURL, "public-url", c.PublicURL, "production base address, ending in /v1")
	fs.StringVar(&c.StagingURL, "staging-url", c.StagingURL, "staging base address, ending in /v1")
	fs.IntVar(&c.Pool.MaxOpen, "db-max-open", c.Pool.MaxOpen, "MySQL: most open connections per instance")
	fs.IntVar(&c.Pool.MaxIdle, "db-max-idle", c.Pool.MaxIdle, "MySQL: most idle connections kept")
	fs.DurationVar(&c.Pool.MaxLifetime, "db-conn-max-lifetime", c.Pool.MaxLifetime, "MySQL: recycle connections after this long")
	fs.DurationVar(&c.Pool.MaxIdleTime, "db-conn-max-idle-time", c.Pool.MaxIdleTime, "MySQL: close connections idle this long")
	fs.DurationVar(&c.DBTimeout, "db-timeout", c.DBTimeout, "longest a database statement may take before the request answers 503")
	fs.DurationVar(&c.KeyCacheTTL, "key-cache-ttl", c.KeyCacheTTL, "how long a key lookup is cached: a revoked key stops working within this time")
	fs.DurationVar(&c.DrainDelay, "drain-delay", c.DrainDelay, "how long SIGTERM keeps serving with /readyz answering 503, so that balancers move away, before draining (default 0 in development)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long shutdown waits for in-flight requests")
	fs.DurationVar(&c.HeaderTimeout, "header-timeout", c.HeaderTimeout, "how long a client may take to send the request headers (slowloris bound)")
	fs.DurationVar(&c.BodyTimeout, "body-timeout", c.BodyTimeout, "how long a client may take to send the whole request")
	fs.DurationVar(&c.WSPingInterval, "ws-ping-interval", c.WSPingInterval, "how often every WebSocket is pinged; a peer that answers none of three is closed")
	fs.IntVar(&c.WSPendingPerAddr, "ws-pending-per-addr", c.WSPendingPerAddr, "most WebSockets one client address (an IPv6 /64) may hold before their connection_init names a key; size it for the browser tabs behind your clients' largest NAT")
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.DurationVar(&c.IdempotencyTTL, "idempotency-ttl", c.IdempotencyTTL, "how long the answer to an Idempotency-Key is kept (at least 24h)")
	fs.DurationVar(&c.APQTTL, "apq-ttl", c.APQTTL, "how long a persisted GraphQL query stays in Redis after its last use (0: no expiry)")
	g := &c.GraphQL
	fs.IntVar(&g.ComplexityLimit, "graphql-complexity-limit", g.ComplexityLimit, "most a GraphQL operation may cost; list fields cost their page size times their elements (negative: off)")
	fs.IntVar(&g.DepthLimit, "graphql-depth-limit", g.DepthLimit, "deepest field nesting of a GraphQL operation (negative: off)")
	fs.IntVar(&g.TokenLimit, "graphql-token-limit", g.TokenLimit, "most tokens in a GraphQL document (negative: off)")
	fs.IntVar(&g.QueryCacheSize, "graphql-query-cache-size", g.QueryCacheSize, "parsed GraphQL documents kept")
	rl := &c.RateLimit
	fs.Int64Var(&rl.AnonymousPerMinute, "anon-per-minute", rl.AnonymousPerMinute, "requests per minute per client address without a valid key")
	fs.Int64Var(&rl.AnonymousPerDay, "anon-per-day", rl.AnonymousPerDay, "requests per day per client address without a valid key")
	fs.Int64Var(&rl.SuspendAfter, "suspend-after", rl.SuspendAfter, "429s within --suspend-window that suspend a key (0: never)")
	fs.DurationVar(&rl.SuspendWindow, "suspend-window", rl.SuspendWindow, "window in which --suspend-after rejections are counted")
	fs.DurationVar(&rl.SuspendBase, "suspend-base", rl.SuspendBase, "length of a first suspension; repeats double it")
	fs.DurationVar(&rl.SuspendMax, "suspend-max", rl.SuspendMax, "longest suspension")
	fs.BoolVar(&rl.FailOpen, "ratelimit-fail-open", rl.FailOpen, "when Redis fails: admit requests uncounted (true) or answer 503 (false)")
	listVar(fs, &c.TrustedProxies, "trusted-proxies", "comma-separated proxy addresses or CIDRs whose X-Forwarded-For is believed")
	listVar(fs, &c.CORSOrigins, "cors-origins", `comma-separated browser origins allowed to call the API ("*": any)`)
}

// listVar defines a flag holding a comma-separated list.
func listVar(fs *flag.FlagSet, list *[]string, name, usage string) {
	fs.Func(name, usage, func(v string) error {
		*list = nil
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				*list = append(*list, item)
			}
		}
		return nil
	})
}

// Parse reads the variables of fs's flags through getenv, then args; it validates the result.
func Parse(fs *flag.FlagSet, c *Config, args []string, getenv func(string) string) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		if v := getenv(name); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.Env == "development" && !isSet(fs, "drain-delay") {
		c.DrainDelay = 0
	}
	var err error
	if c.Tracing, err = TracingFromEnv(getenv); err != nil {
		return err
	}
	return c.Validate()
}

// isSet reports whether a variable or a flag set the flag name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// EnvName returns the variable of a flag: addr is PETSTORE_ADDR.
func EnvName(flagName string) string {
	return "PETSTORE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
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
	if err := c.Idempotency().Validate(); err != nil {
		return fmt.Errorf("PETSTORE_IDEMPOTENCY_TTL: %w", err)
	}
	if err := c.RateLimit.Validate(); err != nil {
		return fmt.Errorf("rate limits: %w", err)
	}
	if _, err := c.Proxies(); err != nil {
		return fmt.Errorf("PETSTORE_TRUSTED_PROXIES: %w", err)
	}
	if len(c.Replicas) > 0 && !strings.HasPrefix(c.DB, "mysql://") {
		return errors.New("PETSTORE_DB_REPLICAS needs PETSTORE_DB to be a mysql:// address")
	}
	return c.validateAddresses()
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

// validateAddresses checks that the addresses that may carry a password parse with it in its
// place; the error never quotes them.
func (c Config) validateAddresses() error {
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

// LogValue logs the settings with passwords masked.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", c.Addr), slog.String("db", secret.Mask(c.DB)), slog.Any("db_replicas", maskAll(c.Replicas)), slog.String("redis", secret.Mask(c.RedisURL)),
		slog.String("env", c.Env), slog.String("public_url", c.PublicURL), slog.String("staging_url", c.StagingURL),
		slog.Int("db_max_open", c.Pool.MaxOpen), slog.Duration("key_cache_ttl", c.KeyCacheTTL),
		slog.Duration("drain_delay", c.DrainDelay), slog.Bool("tracing", c.Tracing),
		slog.Bool("ratelimit_fail_open", c.RateLimit.FailOpen), slog.Any("trusted_proxies", c.TrustedProxies), slog.Any("cors_origins", c.CORSOrigins),
	)
}
