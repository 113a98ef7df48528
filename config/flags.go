package config

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Group is a set of settings. A command registers the groups it reads (Register), so that its
// -h lists those alone; Parse reads the variables of every group whatever the command.
type Group uint

// The groups of settings.
const (
	Logs     Group = 1 << iota // PETSTORE_LOG_LEVEL: every command
	Database                   // PETSTORE_DB, its MySQL pool and PETSTORE_DB_TIMEOUT: serve, migrate, keys
	Env                        // PETSTORE_ENV, which picks the key prefix: serve, keys create
	KeyCache                   // PETSTORE_KEY_CACHE_TTL, the bound on revocation: serve, keys revoke
	Server                     // the rest, which serve alone reads
	Migrate                    // PETSTORE_MIGRATE, whether to apply pending migrations first: serve, keys
	GraphQL                    // PETSTORE_DOCUMENTS and the GraphQL limits: serve, documents add

	All = Logs | Database | Env | KeyCache | Server | Migrate | GraphQL
)

// registrars define the flags of each group.
var registrars = []struct {
	group    Group
	register func(*Config, *flag.FlagSet)
}{
	{Logs, func(c *Config, fs *flag.FlagSet) {
		fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	}},
	{Database, (*Config).databaseFlags},
	{Env, func(c *Config, fs *flag.FlagSet) {
		fs.StringVar(&c.Env, "env", c.Env, "development, staging or production")
	}},
	{KeyCache, func(c *Config, fs *flag.FlagSet) {
		fs.DurationVar(&c.KeyCacheTTL, "key-cache-ttl", c.KeyCacheTTL, "how long a key lookup is cached: a revoked key stops working within this time")
	}},
	{Migrate, func(c *Config, fs *flag.FlagSet) {
		fs.StringVar(&c.Migrate, "migrate", c.Migrate, "auto: apply pending migrations first; off: change no schema, and stop when a migration is pending (run petstore migrate up first)")
	}},
	{Server, (*Config).serverFlags},
	{GraphQL, (*Config).graphqlFlags},
	{Server, (*Config).limitFlags},
	{Server, (*Config).webhookFlags},
}

// Register defines the flags of the settings of groups on fs, with c's values as defaults.
// Each flag name maps to a variable: --db-max-open is PETSTORE_DB_MAX_OPEN.
func (c *Config) Register(fs *flag.FlagSet, groups Group) {
	scratch := flag.NewFlagSet("", flag.ContinueOnError)
	for _, r := range registrars {
		if groups&r.group != 0 {
			r.register(c, scratch)
		}
	}
	scratch.VisitAll(func(f *flag.Flag) { fs.Var(newSetting(f.Value), f.Name, f.Usage) })
}

// databaseFlags defines the flags of the Database group.
func (c *Config) databaseFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DB, "db", c.DB, "database: sqlite:PATH or mysql://USER:PASS@HOST:PORT/DBNAME[?PARAMS]")
	fs.IntVar(&c.Pool.MaxOpen, "db-max-open", c.Pool.MaxOpen, "MySQL: most open connections per instance")
	fs.IntVar(&c.Pool.MaxIdle, "db-max-idle", c.Pool.MaxIdle, "MySQL: most idle connections kept")
	fs.DurationVar(&c.Pool.MaxLifetime, "db-conn-max-lifetime", c.Pool.MaxLifetime, "MySQL: recycle connections after this long")
	fs.DurationVar(&c.Pool.MaxIdleTime, "db-conn-max-idle-time", c.Pool.MaxIdleTime, "MySQL: close connections idle this long")
	fs.DurationVar(&c.DBTimeout, "db-timeout", c.DBTimeout, "longest a database statement may take before the request answers 503")
}

// serverFlags defines the flags of the Server group but its limits.
func (c *Config) serverFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address")
	fs.StringVar(&c.DebugAddr, "debug-addr", c.DebugAddr, "listen address of the Go profiling endpoints (/debug/pprof/), such as 127.0.0.1:6060; empty: none. Never expose it publicly")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "listen address of GET /metrics (Prometheus), such as :9090; the API's listener then answers /metrics with 404. Empty: /metrics on the API's listener")
	listVar(fs, &c.Replicas, "db-replicas", "comma-separated mysql:// addresses of MariaDB read replicas of --db, which serve listings, getPet and key lookups when fresh")
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis for rate-limit state and persisted queries shared by every instance: redis://HOST:PORT/N (one server), redis://HOST:PORT?addr=HOST2:PORT2&addr=... (a cluster; cluster=true behind one address) or redis://SENTINEL:PORT?master_name=NAME (Sentinel); empty: in process")
	fs.StringVar(&c.PublicURL, "public-url", c.PublicURL, "production base address, ending in /v1")
	fs.StringVar(&c.StagingURL, "staging-url", c.StagingURL, "staging base address, ending in /v1")
	fs.StringVar(&c.ContactEmail, "contact-email", c.ContactEmail, "email address of the API's support, given as the contact in the OpenAPI document")
	fs.StringVar(&c.ContactURL, "contact-url", c.ContactURL, "web page of the API's support, given with the email in the OpenAPI document; empty: none")
	fs.StringVar(&c.DevKeyPlan, "dev-key-plan", c.DevKeyPlan, "development: the plan of the key made on the first start (free, pro or business)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", c.DrainDelay, "how long SIGTERM keeps serving with /readyz answering 503, so that balancers move away, before draining; 0 in development unless set")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long shutdown waits for in-flight requests")
	fs.DurationVar(&c.HeaderTimeout, "header-timeout", c.HeaderTimeout, "how long a client may take to send the request headers (slowloris bound)")
	fs.DurationVar(&c.BodyTimeout, "body-timeout", c.BodyTimeout, "how long a client may take to send the whole request")
	fs.DurationVar(&c.WSPingInterval, "ws-ping-interval", c.WSPingInterval, "how often every WebSocket is pinged; a peer that answers none of three is closed")
	fs.IntVar(&c.WSPendingPerAddr, "ws-pending-per-addr", c.WSPendingPerAddr, "most WebSockets one client address (an IPv6 /64) may hold before their connection_init names a key; size it for the browser tabs behind your clients' largest NAT")
	fs.IntVar(&c.WSPendingMax, "ws-pending-max", c.WSPendingMax, "most WebSockets the instance holds before their connection_init names a key, whatever their addresses (503 past it); 0: half of --live-connections-max")
	fs.IntVar(&c.LiveConnectionsMax, "live-connections-max", c.LiveConnectionsMax, "most WebSockets (initialised or not) and SSE streams the instance holds (503 past it); 0: sized from the memory it may use (GOMEMLIMIT, else its cgroup's limit, else 1 GiB): (memory - 96 MiB) / 32 KiB")
	fs.DurationVar(&c.IdempotencyTTL, "idempotency-ttl", c.IdempotencyTTL, "how long the answer to an Idempotency-Key is kept (at least 24h)")
	fs.DurationVar(&c.APQTTL, "apq-ttl", c.APQTTL, "how long a persisted GraphQL query stays in Redis after its last use (0: no expiry)")
	fs.Var((*byteSize)(&c.PageCacheBytes), "page-cache", "most memory the pages of settled pets kept in process may take (e.g. 2MiB, 512KiB), or off: every page read from the database and every answer to be revalidated. Needs off when anything but this service writes the pets table")
	listVar(fs, &c.TrustedProxies, "trusted-proxies", "comma-separated proxy addresses or CIDRs whose X-Forwarded-For is believed")
	listVar(fs, &c.CORSOrigins, "cors-origins", `comma-separated browser origins allowed to call the API ("*": any)`)
}

// graphqlFlags defines the flags of the GraphQL group: which documents run, and the limits
// that serve applies to every operation and documents add to the documents it lists.
func (c *Config) graphqlFlags(fs *flag.FlagSet) {
	g := &c.GraphQL
	fs.Var(choice{&g.DocumentsMode, DocumentsModes}, "documents", "which GraphQL documents run: any (any text, automatic persisted queries, and listed documents by id), listed (only documents listed with petstore documents add, by id or as their exact text) or ids (only listed documents, by id)")
	fs.IntVar(&g.ComplexityLimit, "graphql-complexity-limit", g.ComplexityLimit, "most a GraphQL operation may cost; list fields cost their page size times their elements (negative: off)")
	fs.IntVar(&g.DepthLimit, "graphql-depth-limit", g.DepthLimit, "deepest field nesting of a GraphQL operation (negative: off)")
	fs.IntVar(&g.TokenLimit, "graphql-token-limit", g.TokenLimit, "most tokens in a GraphQL document (negative: off)")
	fs.IntVar(&g.QueryCacheSize, "graphql-query-cache-size", g.QueryCacheSize, "parsed GraphQL documents kept")
}

// limitFlags defines the flags of the rate limits (the Server group).
func (c *Config) limitFlags(fs *flag.FlagSet) {
	rl := &c.RateLimit
	fs.Int64Var(&rl.AnonymousPerMinute, "anon-per-minute", rl.AnonymousPerMinute, "requests per minute per client address without a valid key")
	fs.Int64Var(&rl.AnonymousPerDay, "anon-per-day", rl.AnonymousPerDay, "requests per day per client address without a valid key")
	fs.Int64Var(&rl.SuspendAfter, "suspend-after", rl.SuspendAfter, "429s within --suspend-window that suspend a key (0: never)")
	fs.DurationVar(&rl.SuspendWindow, "suspend-window", rl.SuspendWindow, "window in which --suspend-after rejections are counted")
	fs.DurationVar(&rl.SuspendBase, "suspend-base", rl.SuspendBase, "length of a first suspension; repeats double it")
	fs.DurationVar(&rl.SuspendMax, "suspend-max", rl.SuspendMax, "longest suspension")
	fs.BoolVar(&rl.FailOpen, "ratelimit-fail-open", rl.FailOpen, "when Redis fails: admit requests uncounted (true) or answer 503 (false)")
}

// byteSize is a number of bytes written with a unit (8MiB, 512KiB, 1GiB), or off (0).
type byteSize int

// String returns the size as Set reads it.
func (b *byteSize) String() string {
	switch n := int(*b); {
	case n == 0:
		return "off"
	case n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	default:
		return strconv.Itoa(n)
	}
}

// Set reads off, or a whole number of KiB, MiB or GiB.
func (b *byteSize) Set(v string) error {
	if v == "off" {
		*b = 0
		return nil
	}
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}} {
		if digits, ok := strings.CutSuffix(v, u.suffix); ok {
			n, err := strconv.Atoi(digits)
			if err == nil && n > 0 && n <= 1<<(40-u.shift) {
				*b = byteSize(n << u.shift)
				return nil
			}
		}
	}
	return errors.New("not off or a size up to 1TiB (e.g. 8MiB, 512KiB)")
}

// Get returns the size, for the flag package.
func (b *byteSize) Get() any { return *b }

// choice is a string that takes one of a few values.
type choice struct {
	value  *string
	values []string
}

// String returns the value.
func (c choice) String() string {
	if c.value == nil { // the flag package's zero Value
		return ""
	}
	return *c.value
}

// Set takes v if it is one of the values, or says which they are: "must be any, listed or
// ids; got "all"".
func (c choice) Set(v string) error {
	if !slices.Contains(c.values, v) {
		last := len(c.values) - 1
		return fmt.Errorf("must be %s or %s; got %q", strings.Join(c.values[:last], ", "), c.values[last], v)
	}
	*c.value = v
	return nil
}

// Get returns the value, for the flag package.
func (c choice) Get() any { return *c.value }

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

// EnvName returns the variable of a flag: addr is PETSTORE_ADDR.
func EnvName(flagName string) string {
	return "PETSTORE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
