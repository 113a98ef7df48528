package app

import (
	"context"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/redis/go-redis/v9"

	"petstore/auth"
	"petstore/clientaddr"
	"petstore/config"
	"petstore/live"
	"petstore/live/conns"
	"petstore/live/wire"
	"petstore/observe"
	"petstore/ratelimit"
	"petstore/store"
	"petstore/store/pets"
)

// LiveChannel is the Redis pub/sub channel of the petAdded wake-ups, after the service's key
// prefix (config.Config.RedisKeyPrefix).
const LiveChannel = "live:pets-added"

// subscriptions are the wired petAdded subscription: the Hub that the resolver's writes feed,
// the Registry of its connections, the Server that carries them (WebSockets and SSE streams)
// and its WebSocket transport, which authenticates them.
type subscriptions struct {
	hub  *live.Hub
	reg  *conns.Registry
	wire *wire.Server
	ws   transport.Websocket
}

// newLive wires the petAdded subscription (package live and its conns and wire): a Hub that reads the pets of
// petStore, fanned out through rdb when it is not nil (on LiveChannel after cfg's key prefix),
// and the Registry of its connections, authenticated by authn and charged by limiter, whose
// caps hold on every instance sharing rdb (leases under cfg's key prefix, with the rate
// limiter's failure policy), its WebSockets pinged and their pending sockets capped as cfg
// says.
func newLive(cfg config.Config, db *store.DB, rdb redis.UniversalClient, petStore *pets.Store,
	authn *auth.Authenticator, limiter *ratelimit.Limiter, metrics *observe.Metrics) (subscriptions, error) {
	lm, cm := live.NewMetrics(), conns.NewMetrics()
	if err := metrics.Register(append(lm.Collectors(), cm.Collectors()...)...); err != nil {
		return subscriptions{}, err
	}
	caps := conns.DefaultCaps()
	caps.PendingPerAddr = cfg.WSPendingPerAddr
	hubOpts := live.HubOptions{Read: petStore.After, LastID: petStore.LastID, Metrics: lm}
	regOpts := conns.RegistryOptions{
		Caps:      caps,
		Capacity:  liveCapacity(cfg),
		Check:     conns.KeyCheck(db.DB, limiter.Suspended),
		Charge:    limiter.Charge,
		FailOpen:  cfg.RateLimit.FailOpen,
		PingEvery: cfg.WSPingInterval,
		Metrics:   cm,
	}
	if rdb != nil {
		hubOpts.Bus = live.NewRedisBus(rdb, cfg.RedisKeyPrefix+LiveChannel)
		regOpts.Leases = conns.NewLeases(rdb, cfg.RedisKeyPrefix)
	}
	hub := live.NewHub(hubOpts)
	reg := conns.NewRegistry(hub, regOpts)
	srv := wire.New(reg)
	ws := srv.Websocket(func(ctx context.Context, header string) (*auth.Principal, error) {
		addr, _ := clientaddr.FromContext(ctx) // the upgrade's
		return limiter.Authenticate(ctx, addr, header, authn.Resolve)
	})
	return subscriptions{hub: hub, reg: reg, wire: srv, ws: ws}, nil
}
