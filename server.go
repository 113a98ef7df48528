// Command petstore is the pet store service: `petstore serve` runs the HTTP API (REST and
// GraphQL), `petstore migrate` applies the database migrations, and `petstore keys` manages
// API keys. Every setting is an environment variable with a matching flag (see config).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"petstore/auth"
	"petstore/config"
	"petstore/graph"
	"petstore/graph/guard"
	"petstore/idempotency"
	"petstore/internal/heapfloor"
	"petstore/internal/version"
	"petstore/live"
	"petstore/observe"
	"petstore/playground"
	"petstore/ratelimit"
	"petstore/reference"
	"petstore/rest"
	"petstore/secret"
	"petstore/store"
	"petstore/store/pets"
	"petstore/tracing"
)

// defaultGOGC and heapFloor tune the garbage collector unless GOGC is set. A loaded
// instance's live heap is some 3 MiB, most of it its connections', and a collection costs
// about the same whatever the heap grew to before it (it marks the live heap and every
// goroutine's stack), so what the collector costs a request is set by how far the heap may
// grow between collections. The goal is 200% over the live heap, but never under heapFloor
// (internal/heapfloor raises GOGC after each collection as far as needed). Under the mixed
// load of make bench (callgrind, 30,000 requests), GOGC=200 alone (a 10 MiB goal) made 2.5
// times the collections and 8.6% more instructions a request (314.9 k); a 22 MiB floor costs
// what the 28 MiB goal did while the heap still held 6 MiB of page assets: 290.9 k
// instructions a request against 290.1 k.
const defaultGOGC = 200

// heapFloor is the smallest heap goal unless GOGC is set; see defaultGOGC.
const heapFloor = 22 << 20

// heapHeadroom is, unless GOGC is set, the most the heap may grow past what the last
// collection found live once GOGC=200 would let it grow further (live heap and stacks past 16
// MiB: some 600 subscriptions; make bench's live heap stays under the floor, which sets its
// goal as before). It bounds the garbage that becomes resident between two collections, which
// GOGC=200 alone lets grow to twice the live heap and stacks: with 10,000 idle subscriptions,
// up to 600 MiB, some 60 KiB a subscription, that an operator's dashboard counts as the
// service's; 32 MiB is at most 3.3 KiB a subscription there. The price is CPU: while the
// heap is that large, a collection for every 32 MiB allocated (every 3 or so pets delivered to
// 10,000 subscribers, against some 55 under GOGC=200), each marking the live heap and every
// subscriber's stacks. An instance that would rather spend memory than CPU sets GOGC, which
// leaves the heap's goal to Go.
const heapHeadroom = 32 << 20

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		startSmall()
	}
	if os.Getenv("GOGC") == "" {
		heapfloor.Keep(heapFloor, heapHeadroom, defaultGOGC)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "petstore:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// smallStacks is the GODEBUG setting under which goroutines start with the smallest stack (2
// KiB), not with the average the runtime has seen (adaptivestackstart, on by default). With
// thousands of idle subscribers parked on stacks deeper than most, that average makes every new
// goroutine start at 4 KiB, though most of a subscriber's need less (gqlgen's close watcher,
// an SSE stream's reader and pinger): some 2 KiB of resident memory a subscriber. A goroutine
// that needs more grows its stack once for each doubling: a keep-alive connection's once for
// all its requests.
const smallStacks = "adaptivestackstart=0"

// startSmall runs the program again, in this process (exec), with smallStacks added to
// GODEBUG, which the runtime reads only as the process starts; it returns, the program going
// on as it is, when GODEBUG names adaptivestackstart already or the exec fails.
func startSmall() {
	godebug := os.Getenv("GODEBUG")
	if strings.Contains(godebug, "adaptivestackstart=") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if godebug != "" {
		godebug += ","
	}
	env := []string{"GODEBUG=" + godebug + smallStacks}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	_ = syscall.Exec(exe, os.Args, env)
}

// errUsage marks a command line that names no command.
var errUsage = errors.New("usage: petstore serve | migrate | keys create|list|revoke | --version (-h for flags)")

// run runs the command that args name until ctx is done.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "serve":
		return withConfig(ctx, "serve", args[1:], getenv, stderr, nil, func(cfg config.Config, _ *flag.FlagSet) error {
			return serve(ctx, cfg, stdout)
		})
	case "migrate":
		return withConfig(ctx, "migrate", args[1:], getenv, stderr, nil, func(cfg config.Config, _ *flag.FlagSet) error {
			db, err := openDB(ctx, cfg)
			if err == nil {
				_ = db.Close()
			}
			return err
		})
	case "keys":
		return keys(ctx, args[1:], getenv, stdout, stderr)
	case "--version", "-version", "version":
		_, err := fmt.Fprintln(stdout, version.String())
		return err
	}
	return errUsage
}

// logFlushEvery is the longest a log line waits in observe.LogWriter's buffer.
const logFlushEvery = 100 * time.Millisecond

// withConfig parses the settings and the command's own flags (defined by extra), sets up
// logging, and calls fn.
func withConfig(ctx context.Context, name string, args []string, getenv func(string) string, stderr io.Writer,
	extra func(*flag.FlagSet), fn func(config.Config, *flag.FlagSet) error) error {
	fs := flag.NewFlagSet("petstore "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config.Default()
	cfg.Register(fs)
	if extra != nil {
		extra(fs)
	}
	if err := config.Parse(fs, &cfg, args, getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	logs := observe.NewLogWriter(stderr, logFlushEvery)
	defer logs.Close()
	slog.SetDefault(slog.New(observe.NewJSONLogHandler(logs, &slog.HandlerOptions{Level: cfg.LogLevel})))
	slog.InfoContext(ctx, "petstore "+name, "version", version.Version(), "commit", version.Commit(), "config", cfg)
	return fn(cfg, fs)
}

// openDB opens the configured database and applies pending migrations.
func openDB(ctx context.Context, cfg config.Config, opts ...store.Option) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.DB, cfg.Pool, append(opts, store.WithTimeout(cfg.DBTimeout))...)
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// serve runs the HTTP server until ctx is done, then drains in-flight requests.
func serve(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	tr, err := tracing.Start(ctx, cfg.Tracing) // nil when off
	if err != nil {
		return err
	}
	defer tr.Shutdown() // last: after the server and the stores
	db, err := openDB(ctx, cfg, tr.StoreOptions()...)
	if err != nil {
		return err
	}
	defer db.Close()
	if len(cfg.Replicas) > 0 {
		if db.Replicas, err = store.OpenReplicas(ctx, db, cfg.Replicas, cfg.Pool); err != nil {
			return err
		}
	}
	if cfg.Env == "development" {
		if err := printDevKey(ctx, db, cfg, stdout); err != nil {
			return err
		}
	}
	rdb, err := openRedis(ctx, cfg)
	if err != nil {
		return err
	}
	if rdb != nil {
		defer rdb.Close()
	}
	if err := tr.InstrumentRedis(rdb); err != nil {
		return err
	}
	drain := new(drainer)
	svc, err := newService(cfg, db, rdb, drain, tr)
	if err != nil {
		return err
	}
	purgeCtx, stopPurge := context.WithCancel(ctx)
	purged := make(chan struct{})
	go func() { defer close(purged); svc.records.RunPurger(purgeCtx, idempotency.DefaultPurgeEvery) }()
	defer func() { stopPurge(); <-purged }() // before db.Close
	srv := &http.Server{
		Handler:           svc.handler,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       cfg.BodyTimeout,
		WriteTimeout:      cfg.BodyTimeout + 10*time.Second, // from the end of the headers: body, handling, answer
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20, // hard cap; rest.MaxHeaderBytes answers smaller floods with an Error body
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	profileHeap(cfg.DebugAddr != "")
	if cfg.DebugAddr != "" {
		debug, err := serveDebug(cfg.DebugAddr, errc)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer debug.Close()
		fmt.Fprintf(stdout, "profiling endpoints on http://%s/debug/pprof/\n", debug.Addr)
	}
	if cfg.MetricsAddr != "" {
		metrics, err := serveMetrics(cfg.MetricsAddr, svc.metrics, errc)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer metrics.Close()
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", metrics.Addr)
	}
	fmt.Fprintf(stdout, "petstore listening on http://%s (REST at /v1/pets, GraphQL at /v1/graphql)\n", ln.Addr())
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return shutdown(srv, drain, cfg, errc)
}

// shutdown stops srv in two steps. For PETSTORE_DRAIN_DELAY the listener still accepts and
// every request is served, but /readyz answers 503 and every answer carries Connection: close:
// a balancer that checks /readyz marks the instance down, and keep-alive clients open their
// next connection elsewhere. Then srv.Shutdown closes the listener and the idle connections
// (no balancer sends on them any more) and waits up to PETSTORE_SHUTDOWN_TIMEOUT for the
// requests in flight.
func shutdown(srv *http.Server, drain *drainer, cfg config.Config, errc <-chan error) error {
	drain.on.Store(true)
	slog.Info("shutting down: /readyz answers 503, serving on for the drain delay", "drain_delay", cfg.DrainDelay)
	select {
	case err := <-errc:
		return err
	case <-time.After(cfg.DrainDelay):
	}
	if drain.closeStreams != nil {
		drain.closeStreams() // subscribers get 1001 (or the end of their stream) and resume elsewhere
	}
	slog.Info("shutting down: draining in-flight requests", "timeout", cfg.ShutdownTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// drainer is the state of a shutdown: off until serve is told to stop.
type drainer struct {
	on           atomic.Bool
	closeStreams func() // closes every subscriber connection once the drain delay is over; nil for none
}

// Draining reports whether shutdown has begun (rest.Deps.Draining).
func (d *drainer) Draining() bool { return d.on.Load() }

// Middleware asks the client to close its connection after each answer once shutdown has begun
// (Go's server then closes it), so that its next request goes, through its balancer, to
// another instance. Idle connections are left alone until srv.Shutdown: closing one while a
// balancer sends a request on it would lose that request.
func (d *drainer) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.on.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// profileHeap turns the sampling of allocations for heap profiles on (at the rate the process
// started with, by default one sample every 512 KiB allocated) or off. Only the profiling
// endpoints read the samples, and each costs a stack walk and a record kept for the life of
// the process: 0.5% of a request's instructions and 1.4 MiB of resident memory under the
// mixed load of make bench.
func profileHeap(on bool) {
	rate := 0
	if on {
		rate = goMemProfileRate
	}
	heapProfiling.Lock()
	defer heapProfiling.Unlock()
	runtime.MemProfileRate = rate
}

var (
	heapProfiling    sync.Mutex // serialises the writes of runtime.MemProfileRate (tests serve in one process)
	goMemProfileRate = runtime.MemProfileRate
)

// serveDebug serves net/http/pprof's endpoints on their own listener at addr, away from the
// API's router, middleware and limits; a failure of its server is sent to errc.
func serveDebug(addr string, errc chan<- error) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serveAux("debug", addr, mux, errc)
}

// serveMetrics serves h, the Prometheus handler, at /metrics on a listener of its own at addr
// (PETSTORE_METRICS_ADDR), and nothing else.
func serveMetrics(addr string, h http.Handler, errc chan<- error) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return serveAux("metrics", addr, mux, errc)
}

// serveAux serves h on a listener of its own at addr, named name in errors sent to errc.
func serveAux(name, addr string, h http.Handler, errc chan<- error) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listener: %w", name, err)
	}
	srv := &http.Server{Addr: ln.Addr().String(), Handler: rest.NoSniff(h), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("%s listener: %w", name, err)
		}
	}()
	return srv, nil
}

// redisCheckTimeout bounds the start-up check of Redis.
const redisCheckTimeout = 2 * time.Second

// errClusterNode is the start-up check's error for a URL that names one node of a cluster.
var errClusterNode = errors.New("is a node of a Redis Cluster, but the URL names one server (keys of other nodes' " +
	"slots would fail): name the cluster, with addr=HOST:PORT parameters for its other nodes or cluster=true")

// openRedis returns a client of the Redis that cfg.RedisURL names (one server, a cluster or a
// Sentinel-managed primary: config.RedisTarget), or nil when it is empty. It checks that Redis
// answers, within redisCheckTimeout: a Redis that answers but cannot work as named (a wrong
// password, a cluster node named as one server, a cluster URL at a lone server) is an error;
// one that does not answer is an error under PETSTORE_RATELIMIT_FAIL_OPEN=false (every
// request would be refused) and a warning otherwise (requests are admitted uncounted until it
// answers, as when Redis fails later). Its timeouts are short unless the URL sets them: every
// API request waits for one rate-limit decision.
func openRedis(ctx context.Context, cfg config.Config) (redis.UniversalClient, error) {
	if cfg.RedisURL == "" {
		return nil, nil
	}
	target, err := config.ParseRedisURL(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	client := newRedisClient(target)
	err = checkRedis(ctx, client, target.Kind)
	if err == nil {
		slog.InfoContext(ctx, "redis answers", "redis", target.String(), "addrs", target.Addrs())
		return client, nil
	}
	if redisMisconfigured(err) || !cfg.RateLimit.FailOpen {
		_ = client.Close()
		if !redisMisconfigured(err) {
			err = fmt.Errorf("does not answer, and PETSTORE_RATELIMIT_FAIL_OPEN=false would refuse every request: %w", err)
		}
		return nil, fmt.Errorf("PETSTORE_REDIS_URL %s (%s): %w", secret.Mask(cfg.RedisURL), target, err)
	}
	slog.WarnContext(ctx, "redis does not answer at start: rate limits are not counted until it does "+
		"(PETSTORE_RATELIMIT_FAIL_OPEN=true)", "redis", target.String(), "url", secret.Mask(cfg.RedisURL), "err", err)
	return client, nil
}

// newRedisClient returns the client of t, with short timeouts and one retry unless the URL sets
// them.
func newRedisClient(t config.RedisTarget) redis.UniversalClient {
	switch t.Kind {
	case config.RedisCluster:
		o := t.Cluster
		shortRedisTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.MaxRetries, &o.DialerRetries)
		return redis.NewClusterClient(o)
	case config.RedisSentinel:
		o := t.Sentinel
		shortRedisTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.MaxRetries, &o.DialerRetries)
		return redis.NewFailoverClient(o)
	}
	o := t.Node
	shortRedisTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.MaxRetries, &o.DialerRetries)
	return redis.NewClient(o)
}

// shortRedisTimeouts sets the settings that are zero (not set by the URL): 1 s to connect,
// 500 ms to write or read, one retry of a command and one dial per attempt. go-redis's default
// of five dials, 100 ms apart, kept each request 1.6 to 3.4 s on a stopped cluster node (one
// dial: 10 to 120 ms) before the failure policy answered.
func shortRedisTimeouts(dial, read, write *time.Duration, retries, dials *int) {
	for _, d := range []struct {
		p *time.Duration
		v time.Duration
	}{{dial, time.Second}, {read, 500 * time.Millisecond}, {write, 500 * time.Millisecond}} {
		if *d.p == 0 {
			*d.p = d.v
		}
	}
	for _, n := range []*int{retries, dials} {
		if *n == 0 {
			*n = 1
		}
	}
}

// checkRedis checks that client answers as a Redis of kind: a ping of every primary of a
// cluster, else of the server, which must not be a cluster node.
func checkRedis(ctx context.Context, client redis.UniversalClient, kind string) error {
	ctx, cancel := context.WithTimeout(ctx, redisCheckTimeout)
	defer cancel()
	if c, ok := client.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return node.Ping(ctx).Err()
		})
	}
	if err := client.Ping(ctx).Err(); err != nil {
		return err
	}
	info, err := client.Info(ctx, "cluster").Result()
	if err != nil {
		return err
	}
	if kind == config.RedisNode && strings.Contains(info, "cluster_enabled:1") {
		return errClusterNode
	}
	return nil
}

// redisMisconfigured reports whether err, from checkRedis, says that Redis answered but cannot
// work as configured, rather than that it is out of reach for now.
func redisMisconfigured(err error) bool {
	if errors.Is(err, errClusterNode) {
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false // no answer: refused, timed out, no Sentinel reachable
	}
	for _, transient := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY"} {
		if redis.HasErrorPrefix(err, transient) {
			return false
		}
	}
	return true
}

// service is the wired service: its whole HTTP handler, and the Idempotency-Key records it
// keeps, whose expired entries serve purges beside it.
type service struct {
	handler http.Handler
	metrics http.Handler // the Prometheus handler, for PETSTORE_METRICS_ADDR
	records *idempotency.Records
}

// newService wires the service on db (and rdb when not nil); drain tells the handler when
// shutdown begins. tr traces requests, GraphQL operations and resolvers (tracing off when nil:
// nothing is installed); the statements and commands of db and rdb are traced when they were
// opened and instrumented by tr.
func newService(cfg config.Config, db *store.DB, rdb redis.UniversalClient, drain *drainer, tr *tracing.Tracer) (*service, error) {
	cfg.GraphQL.Tracer, cfg.RateLimit.PipelineContext = tr.GraphQL(), tr.PipelineContext()
	records, err := idempotency.New(db.DB, cfg.Idempotency())
	if err != nil {
		return nil, err
	}
	deps, err := newDeps(cfg, db, rdb, records)
	if err != nil {
		return nil, err
	}
	if tr != nil {
		rl := observe.NewRequestLog(nil)
		rl.TraceID = tracing.TraceID
		deps.RequestLog, deps.Trace = rl.Middleware, tr.Middleware()
	}
	deps.Draining = drain.Draining
	drain.closeStreams = deps.Shutdown
	return &service{handler: drain.Middleware(rest.NoSniff(rest.CORS(cfg.CORSOrigins, rest.NewRouter(deps)))),
		metrics: deps.Metrics.Handler(), records: records}, nil
}

// newDeps wires the resolvers, GraphQL, auth, the rate limiter (in Redis when rdb is not nil,
// else in process) and records' Idempotency-Key middleware for the router.
func newDeps(cfg config.Config, db *store.DB, rdb redis.UniversalClient, records *idempotency.Records) (rest.Deps, error) {
	doc, err := rest.OpenAPIDocument(cfg.PublicURL, cfg.StagingURL)
	if err != nil {
		return rest.Deps{}, err
	}
	metrics, err := observe.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		return rest.Deps{}, err
	}
	if err := metrics.RegisterDB(db.SQL()); err != nil {
		return rest.Deps{}, err
	}
	var limits ratelimit.Counters = ratelimit.NewMemoryCounters(nil)
	if rdb != nil {
		rs := ratelimit.NewRedisCounters(rdb, cfg.RateLimit.RedisKeyPrefix)
		rs.PipelineContext = cfg.RateLimit.PipelineContext
		limits = rs
	}
	rl := cfg.RateLimit
	rl.OnDecision = metrics.ObserveDecision
	limiter, err := ratelimit.New(rl, limits)
	if err != nil {
		return rest.Deps{}, err
	}
	if err := metrics.RegisterStoreErrors(limiter.StoreErrors); err != nil {
		return rest.Deps{}, err
	}
	proxies, err := cfg.Proxies()
	if err != nil {
		return rest.Deps{}, err
	}
	gqlOpts := cfg.GraphQL
	if rdb != nil {
		gqlOpts.APQCache = guard.NewRedisAPQCache(rdb, "apq:", cfg.APQTTL)
	}
	petStore := pets.New(db, cfg.DBTimeout)
	authn := auth.NewAuthenticator(db.DB, cfg.KeyPrefix(), cfg.KeyCacheTTL, cfg.DBTimeout)
	authn.Replicas = db.Replicas
	subs, hub, err := newLive(db, rdb, cfg, petStore, authn, limiter, metrics, &gqlOpts)
	if err != nil {
		return rest.Deps{}, err
	}
	resolver := graph.NewResolver(petStore, graph.ResolverOptions{Live: subs, Published: hub.Publish})
	gql := graph.NewHandler(resolver, gqlOpts)
	origins := rest.AllowsOrigin(cfg.CORSOrigins) // the browser origins a WebSocket may come from
	return rest.Deps{
		Resolver:   resolver,
		GraphQL:    gql,
		OpenAPI:    doc,
		Playground: playground.Handler("/v1/graphql"),
		Reference:  reference.Handler("/v1/openapi.json"),
		SDL:        graph.SDL(),
		Identify:   authn.Identify,
		Lookup:     authn.Lookup,
		Limit:      limiter,
		Idempotent: records.Middleware,
		ClientAddr: proxies.Middleware,
		RequestLog: observe.NewRequestLog(nil).Middleware, // slog.Default(), set up by withConfig
		Metrics:    metrics,
		MetricsOff: cfg.MetricsAddr != "",
		Ready:      db.Ready,
		Upgrade:    subs.Upgrade(origins, limiter.ClientAddr, gql),
		Keyless:    live.KeylessUpgrade(origins),
		Stream:     subs.Stream(gql),
		Shutdown:   subs.Shutdown,
	}, nil
}

// printDevKey creates and prints a development key when the database has no key at all.
func printDevKey(ctx context.Context, db *store.DB, cfg config.Config, stdout io.Writer) error {
	key, err := auth.EnsureDevKey(ctx, db.DB, cfg.KeyPrefix())
	if err != nil {
		return fmt.Errorf("create the development key: %w", err)
	}
	if key == "" {
		fmt.Fprintln(stdout, "development: API keys exist already; make a new one with: petstore keys create --plan free")
		return nil
	}
	fmt.Fprintf(stdout, "development API key (free plan, shown once):\n%s\n", key)
	fmt.Fprintf(stdout, "try: curl -H 'Authorization: Bearer %s' %s/v1/pets\n", key, localURL(cfg.Addr))
	return nil
}

// localURL returns the URL at which this machine reaches a server listening on addr: ":8080"
// and "0.0.0.0:8080" give http://localhost:8080, "[::1]:8080" gives http://[::1]:8080.
func localURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
