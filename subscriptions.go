package main

import (
	"github.com/redis/go-redis/v9"

	"petstore/auth"
	"petstore/graph"
	"petstore/live"
	"petstore/observe"
	"petstore/ratelimit"
	"petstore/store"
)

// liveChannel is the Redis pub/sub channel of the petAdded wake-ups, after the rate limiter's
// key prefix.
const liveChannel = "live:pets-added"

// newLive wires the petAdded subscription (package live) into resolver, gqlOpts and deps'
// middleware: a Hub fed by the resolver's writes, fanned out through rdb when it is not nil
// (on the channel liveChannel after prefix),
// and the Registry of its connections, authenticated by authn and charged by limiter. It
// returns the Registry, whose Shutdown closes every subscriber.
func newLive(db *store.DB, rdb redis.UniversalClient, prefix string, resolver *graph.Resolver,
	authn *auth.Authenticator, limiter *ratelimit.Limiter, metrics *observe.Metrics, gqlOpts *graph.Options) (*live.Registry, error) {
	lm := live.NewMetrics()
	if err := metrics.Register(lm.Collectors()...); err != nil {
		return nil, err
	}
	hubOpts := live.HubOptions{Read: resolver.PetsAfter, LastID: resolver.LastPetID, Metrics: lm}
	if rdb != nil {
		hubOpts.Bus = live.NewRedisBus(rdb, prefix+liveChannel)
	}
	hub := live.NewHub(hubOpts)
	reg := live.NewRegistry(hub, live.RegistryOptions{
		Caps:   live.DefaultCaps(),
		Check:  live.KeyCheck(db.DB, limiter.Suspended),
		Charge: limiter.Charge,
	})
	resolver.Live = reg
	resolver.Published = hub.Publish
	ws := reg.Websocket(authn.Authenticate)
	gqlOpts.Websocket = &ws
	gqlOpts.SSE = true
	gqlOpts.Gate = reg.Gate
	return reg, nil
}
