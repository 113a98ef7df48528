package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"petstore/auth"
	"petstore/clientaddr"
	"petstore/config"
	"petstore/graph"
	"petstore/live"
	"petstore/observe"
	"petstore/ratelimit"
	"petstore/store"
	"petstore/store/pets"
)

// liveChannel is the Redis pub/sub channel of the petAdded wake-ups, after the rate limiter's
// key prefix.
const liveChannel = "live:pets-added"

// newLive wires the petAdded subscription (package live) into gqlOpts and deps' middleware: a
// Hub that reads the pets of petStore, fed by the resolver's writes (Hub.Publish), fanned out
// through rdb when it is not nil (on the channel liveChannel after rl's key prefix), and the
// Registry of its connections, authenticated by authn and charged by limiter, whose caps hold
// on every instance sharing rdb (leases under the rate limiter's key prefix, with its failure
// policy), its WebSockets pinged and their pending sockets capped as cfg says. It returns the
// Registry, whose Shutdown closes every subscriber, and the Hub.
func newLive(db *store.DB, rdb redis.UniversalClient, cfg config.Config, petStore *pets.Store,
	authn *auth.Authenticator, limiter *ratelimit.Limiter, metrics *observe.Metrics, gqlOpts *graph.Options) (*live.Registry, *live.Hub, error) {
	lm := live.NewMetrics()
	if err := metrics.Register(lm.Collectors()...); err != nil {
		return nil, nil, err
	}
	rl := cfg.RateLimit
	caps := live.DefaultCaps()
	caps.PendingPerAddr = cfg.WSPendingPerAddr
	hubOpts := live.HubOptions{Read: petStore.After, LastID: petStore.LastID, Metrics: lm}
	regOpts := live.RegistryOptions{
		Caps:      caps,
		Check:     live.KeyCheck(db.DB, limiter.Suspended),
		Charge:    limiter.Charge,
		FailOpen:  rl.FailOpen,
		PingEvery: cfg.WSPingInterval,
	}
	if rdb != nil {
		hubOpts.Bus = live.NewRedisBus(rdb, rl.RedisKeyPrefix+liveChannel)
		regOpts.Leases = live.NewLeases(rdb, rl.RedisKeyPrefix)
	}
	hub := live.NewHub(hubOpts)
	reg := live.NewRegistry(hub, regOpts)
	ws := reg.Websocket(func(ctx context.Context, header string) (*auth.Principal, error) {
		addr, _ := clientaddr.FromContext(ctx) // the upgrade's
		return limiter.Authenticate(ctx, addr, header, authn.Resolve)
	})
	gqlOpts.Websocket = &ws
	gqlOpts.SSE = true
	gqlOpts.Gate = reg
	return reg, hub, nil
}
