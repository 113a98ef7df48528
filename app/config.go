package app

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"petstore/auth"
	"petstore/clientaddr"
	"petstore/config"
	"petstore/graph"
	"petstore/idempotency"
	"petstore/live/conns"
	"petstore/ratelimit"
	"petstore/store"
	"petstore/webhooks"
)

// DefaultConfig returns the settings used where neither a variable nor a flag says otherwise.
// A setting of a part defaults to the part's own default (store.DefaultPool,
// graph.DefaultComplexityLimit, ratelimit.DefaultConfig, ...), so that the two cannot differ;
// the others are the service's, here.
func DefaultConfig() config.Config {
	rl := ratelimit.DefaultConfig()
	return config.Config{
		Addr:           ":8080",
		DB:             "sqlite:petstore.db",
		Migrate:        config.MigrateAuto,
		RedisKeyPrefix: rl.RedisKeyPrefix,
		Env:            "development",
		PublicURL:      "https://api.petstore.example/v1",
		StagingURL:     "https://staging.api.petstore.example/v1",
		ContactEmail:   "api@petstore.example",
		Pool:           config.Pool(store.DefaultPool),
		DBTimeout:      store.DefaultTimeout,
		KeyCacheTTL:    auth.DefaultCacheTTL,
		// A balancer that checks /readyz every second or two has marked the instance down well
		// within 5 s. config.Parse makes it 0 in development, so that Ctrl-C stops `make run`
		// at once.
		DrainDelay:       5 * time.Second,
		ShutdownTimeout:  20 * time.Second,
		HeaderTimeout:    5 * time.Second,
		BodyTimeout:      30 * time.Second,
		WSPingInterval:   conns.DefaultPingEvery,
		WSPendingPerAddr: conns.DefaultPendingPerAddr,
		LogLevel:         slog.LevelInfo,
		IdempotencyTTL:   idempotency.DefaultConfig().TTL,
		APQTTL:           24 * time.Hour,
		DevKeyPlan:       auth.Pro.Name, // a working day of playground and scripts, and still a plan with limits
		PageCacheBytes:   2 << 20,       // some 25,000 pets, in pages of any size, within the memory the service is measured in
		GraphQL: config.GraphQLSettings{
			DocumentsMode:   string(graph.DocumentsAny),
			ComplexityLimit: graph.DefaultComplexityLimit,
			DepthLimit:      graph.DefaultDepthLimit,
			TokenLimit:      graph.DefaultTokenLimit,
			QueryCacheSize:  graph.DefaultQueryCacheSize,
		},
		RateLimit: config.RateLimit{
			AnonymousPerMinute: rl.AnonymousPerMinute, AnonymousPerDay: rl.AnonymousPerDay,
			SuspendAfter: rl.SuspendAfter, SuspendWindow: rl.SuspendWindow,
			SuspendBase: rl.SuspendBase, SuspendMax: rl.SuspendMax, FailOpen: rl.FailOpen,
		},
		Webhooks: config.Webhooks{Schedule: webhooks.DefaultSchedule, Timeout: 15 * time.Second, SecretGrace: webhooks.DefaultGrace, Deliver: true},
	}
}

// checkParts reports the first setting that a part's own rules refuse: the Idempotency-Key
// records', the rate limiter's, the trusted proxies' and the plans'. It runs right after
// config.Parse, so that such a setting too stops every command before it changes anything.
func checkParts(cfg config.Config) error {
	if err := idempotencyConfig(cfg).Validate(); err != nil {
		return fmt.Errorf("PETSTORE_IDEMPOTENCY_TTL: %w", err)
	}
	if err := limiterConfig(cfg).Validate(); err != nil {
		return fmt.Errorf("rate limits: %w", err)
	}
	if _, err := clientaddr.ParseProxies(cfg.TrustedProxies); err != nil {
		return fmt.Errorf("PETSTORE_TRUSTED_PROXIES: %w", err)
	}
	if !slices.Contains([]string{auth.Free.Name, auth.Pro.Name, auth.Business.Name}, cfg.DevKeyPlan) {
		return fmt.Errorf("PETSTORE_DEV_KEY_PLAN must be free, pro or business; got %q", cfg.DevKeyPlan)
	}
	return nil
}

// idempotencyConfig returns the settings of the Idempotency-Key records.
func idempotencyConfig(cfg config.Config) idempotency.Config {
	ic := idempotency.DefaultConfig()
	ic.TTL, ic.QueryTimeout = cfg.IdempotencyTTL, cfg.DBTimeout
	return ic
}

// limiterConfig returns the rate limiter's defaults with cfg's settings and Redis key prefix.
func limiterConfig(cfg config.Config) ratelimit.Config {
	rl, s := ratelimit.DefaultConfig(), cfg.RateLimit
	rl.AnonymousPerMinute, rl.AnonymousPerDay = s.AnonymousPerMinute, s.AnonymousPerDay
	rl.SuspendAfter, rl.SuspendWindow, rl.SuspendBase, rl.SuspendMax = s.SuspendAfter, s.SuspendWindow, s.SuspendBase, s.SuspendMax
	rl.FailOpen, rl.RedisKeyPrefix = s.FailOpen, cfg.RedisKeyPrefix
	return rl
}
