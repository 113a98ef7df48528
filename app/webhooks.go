package app

import (
	"context"

	"petstore/config"
	"petstore/observe"
	"petstore/store"
	"petstore/store/pets"
	"petstore/webhooks"
)

// hooks are the wired parts of webhooks.
type hooks struct {
	endpoints  *webhooks.Endpoints
	dispatcher *webhooks.Dispatcher
}

// delivering returns the dispatcher when this instance delivers (PETSTORE_WEBHOOK_DELIVER),
// else nil: the pets it adds are queued and sent by the instances that do.
func (h hooks) delivering(cfg config.Config) *webhooks.Dispatcher {
	if !cfg.Webhooks.Deliver {
		return nil
	}
	return h.dispatcher
}

// newWebhooks returns the webhook endpoints and dispatcher of cfg on db, with the
// dispatcher's metrics registered, tailing petStore's settled pages, and makes every pet
// petStore creates wake the dispatcher once it committed, and write its outbox row when its
// write was late (pets.Store.Outbox).
func newWebhooks(cfg config.Config, db *store.DB, petStore *pets.Store, metrics *observe.Metrics, o options) (hooks, error) {
	w := cfg.Webhooks
	addrs := webhooks.Addresses{Resolver: o.resolver, AllowPrivate: w.AllowPrivate}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DBTimeout)
	defer cancel()
	d, err := webhooks.NewDispatcher(ctx, db, webhooks.Options{Schedule: w.Schedule, Timeout: w.Timeout, Addresses: addrs, DBTimeout: cfg.DBTimeout,
		Tail: petStore.After})
	if err != nil {
		return hooks{}, err
	}
	if err := metrics.Register(d.Metrics.Collectors()...); err != nil {
		return hooks{}, err
	}
	petStore.Outbox(d.Wake)
	return hooks{endpoints: webhooks.NewEndpoints(db, addrs, petStore.After, w.SecretGrace, cfg.DBTimeout), dispatcher: d}, nil
}
