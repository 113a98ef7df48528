package webhooks

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"petstore/store"
)

// Active tells whether an enabled endpoint subscribed to pet.created exists, on any instance:
// only then does a pet write its outbox row (store/pets), so that a service nobody registered
// an endpoint with pays one INSERT per pet and nothing more. Each instance reads it from the
// database every poll (Dispatcher.Run) and sets it at once when it registers or enables an
// endpoint itself. It is safe for concurrent use.
type Active struct {
	on     atomic.Bool
	warmUp time.Duration
}

// On reports whether pets must write their outbox rows.
func (a *Active) On() bool { return a.on.Load() }

// WarmUp is how long after an endpoint is registered or enabled every instance surely writes
// the outbox rows of its pets: a poll for each to learn of the endpoint, and two statement
// timeouts (the read that learns it, and a pet's write that began just before), a second
// more for the instances' clocks. Past it the dispatcher catches up (catchUp).
func (a *Active) WarmUp() time.Duration { return a.warmUp }

// activeSQL finds whether any instance's pets must write their outbox rows.
var activeSQL = "SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL AND events LIKE '%" + PetCreated + "%')"

// refresh reads whether an enabled endpoint exists; when the read fails, pets write their
// rows, which costs but loses none.
func (d *Dispatcher) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	defer cancel()
	var on bool
	if err := d.db.WithContext(ctx).Raw(activeSQL).Scan(&on).Error; err != nil {
		if ctx.Err() == nil {
			slog.WarnContext(ctx, "webhooks: reading whether an endpoint exists failed", "error", err)
		}
		on = true
	}
	d.Active.on.Store(on)
}

// watch refreshes Active every poll until ctx ends, and catches up the endpoints whose
// warm-up ended.
func (d *Dispatcher) watch(ctx context.Context) {
	tick := time.NewTicker(d.opts.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		d.refresh(ctx)
		if d.Active.On() {
			d.catchUpAll(ctx)
		}
	}
}

// catchUpAll catches up every endpoint whose warm-up ended.
func (d *Dispatcher) catchUpAll(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	var ids []string
	err := d.db.WithContext(qctx).Raw("SELECT id FROM webhook_endpoints WHERE catch_up_at <= ?", time.Now().UTC()).Scan(&ids).Error
	cancel()
	for _, id := range ids {
		if err == nil {
			err = d.catchUp(ctx, id)
		}
	}
	if err != nil && ctx.Err() == nil {
		slog.WarnContext(ctx, "webhooks: catching up an endpoint failed", "error", err)
	}
}

// catchUp queues, for the endpoint id, a delivery of every pet above its after_id that has
// neither a delivery to it nor an outbox row: the pets of instances that had not yet learnt
// of the endpoint during its warm-up. One instance does it, once: it locks the endpoint's
// row and clears catch_up_at. The reads run pets, outbox, deliveries in that order, so that
// a pet whose row the dispatcher turns into its delivery meanwhile is seen in one or the
// other, whatever the isolation level.
func (d *Dispatcher) catchUp(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	defer cancel()
	queued := 0
	err := store.Transact(ctx, d.db, func(tx *gorm.DB) error {
		var after []int64
		if err := tx.Raw("SELECT after_id FROM webhook_endpoints WHERE id = ? AND catch_up_at IS NOT NULL"+d.lock, id).Scan(&after).Error; err != nil || len(after) == 0 {
			return err
		}
		var pets, outbox, delivered []int64
		if err := tx.Raw("SELECT id FROM pets WHERE id > ? ORDER BY id", after[0]).Scan(&pets).Error; err != nil {
			return err
		}
		if err := tx.Raw("SELECT pet_id FROM webhook_outbox WHERE pet_id > ?", after[0]).Scan(&outbox).Error; err != nil {
			return err
		}
		if err := tx.Raw("SELECT pet_id FROM webhook_deliveries WHERE endpoint_id = ? AND pet_id > ?", id, after[0]).Scan(&delivered).Error; err != nil {
			return err
		}
		seen := make(map[int64]bool, len(outbox)+len(delivered))
		for _, p := range append(outbox, delivered...) {
			seen[p] = true
		}
		now := time.Now().UTC()
		var ds []newDelivery
		for _, p := range pets {
			if !seen[p] {
				ds = append(ds, newDelivery{endpoint: id, pet: p, at: now})
			}
		}
		if err := insertDeliveries(tx, ds, now); err != nil {
			return err
		}
		queued = len(ds)
		return tx.Exec("UPDATE webhook_endpoints SET catch_up_at = NULL WHERE id = ?", id).Error
	})
	if err == nil {
		d.Metrics.queued.Add(float64(queued))
	}
	return err
}
