package webhooks

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"strconv"
	"time"

	"gorm.io/gorm"

	"petstore/models"
	"petstore/store"
)

// Tail reads up to n pets after afterID in id order, of status when it is not nil, and
// whether more follow, settled: no pet it passes can commit later, but one whose write was
// late, which then has its outbox row (pets.Store.After and pets.Store.Outbox).
type Tail func(ctx context.Context, afterID int64, n int, status *models.PetStatus) ([]models.Pet, bool, error)

// fanOutBatch is the most pets one fan-out reads, and the most outbox rows one pass takes.
const fanOutBatch = 500

// target is an enabled endpoint subscribed to pet.created, as a fan-out reads it.
type target struct {
	EndpointState
	ID       string
	URL      string
	AfterID  int64 // it gets the pets above it
	QueuedID int64 // those up to it are queued
}

// targetsSQL reads the targets of a fan-out.
var targetsSQL = "SELECT id, url, secret, old_secret, old_secret_until, after_id, queued_id FROM webhook_endpoints" +
	" WHERE disabled_at IS NULL AND events LIKE '%" + PetCreated + "%' ORDER BY id"

// errMoved rolls back a fan-out whose endpoints changed since it read them: another
// instance queued the same pets, or an endpoint was disabled, enabled or removed.
var errMoved = errors.New("webhooks: an endpoint changed during the fan-out")

// fanOut reads the pets after the lowest queued_id of the targets, one settled page of the
// pets table (opts.Tail), and queues one delivery of each to every target whose queued_id is
// below it, claimed by this instance, moving each target's queued_id to the page's last pet
// in the same transaction, on the condition that no other fan-out moved it meanwhile. It
// returns the deliveries to send, and whether more pets may follow: a full page, or a
// fan-out that another instance's overtook.
func (d *Dispatcher) fanOut(ctx context.Context) ([]job, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	defer cancel()
	var targets []target
	if err := d.db.WithContext(ctx).Raw(targetsSQL).Scan(&targets).Error; err != nil {
		return nil, false, err
	}
	d.lookedAt = time.Now()
	if d.targeted = len(targets) > 0; !d.targeted {
		return nil, false, nil
	}
	from := targets[0].QueuedID
	for _, t := range targets {
		from = min(from, t.QueuedID)
	}
	pets, more, err := d.opts.Tail(ctx, from, fanOutBatch, nil)
	if err != nil || len(pets) == 0 {
		return nil, false, err
	}
	last, now := pets[len(pets)-1].ID, time.Now().UTC()
	until := now.Add(d.lease())
	var (
		jobs []job
		ds   []newDelivery
	)
	for _, t := range targets {
		for _, p := range pets {
			if p.ID > t.QueuedID { // queued_id is never below after_id
				id := eventID(t.ID, p.ID)
				ds = append(ds, newDelivery{id: id, endpoint: t.ID, pet: p.ID, at: now})
				jobs = append(jobs, job{ID: id, EndpointID: t.ID, PetID: p.ID, EventAt: now, URL: t.URL, EndpointState: t.EndpointState,
					Name: p.Name, CategoryID: p.CategoryID, Status: p.Status, until: until})
			}
		}
	}
	err = store.Transact(ctx, d.db, func(tx *gorm.DB) error {
		for _, t := range targets {
			if t.QueuedID >= last {
				continue
			}
			res := tx.Exec("UPDATE webhook_endpoints SET queued_id = ? WHERE id = ? AND queued_id = ? AND disabled_at IS NULL", last, t.ID, t.QueuedID)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return errMoved
			}
		}
		return insertDeliveries(tx, ds, until)
	})
	if errors.Is(err, errMoved) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	d.Metrics.queued.Add(float64(len(jobs)))
	return jobs, more, nil
}

// eventID returns the webhook-id of the pet's pet.created delivery to the endpoint: the same
// whichever instance queues it, from a page or from the outbox, so that it is queued once.
func eventID(endpoint string, pet int64) string {
	sum := sha256.Sum256([]byte(endpoint + "/" + strconv.FormatInt(pet, 10)))
	return "msg_" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16])
}

// takeLate takes up to fanOutBatch rows of the outbox, the pets whose write was late, and
// queues, due at once, the delivery of each to every target above whose after_id it is and
// which has not got it. A row waits while a target's queued_id is below its pet: the pet
// then comes with a page, and the row is taken once the page's fan-out committed, so that it
// cannot pass the pet between the two. The targets stay locked until it commits (share). It
// returns how many rows it took.
func (d *Dispatcher) takeLate(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	defer cancel()
	taken, queued := 0, 0
	err := store.Transact(ctx, d.db, func(tx *gorm.DB) error {
		var rows []struct {
			ID        int64
			PetID     int64
			CreatedAt time.Time
		}
		if err := tx.Raw("SELECT id, pet_id, created_at FROM webhook_outbox ORDER BY id LIMIT ?"+d.lock, fanOutBatch).Scan(&rows).Error; err != nil {
			return err
		}
		taken, queued = 0, 0
		if len(rows) == 0 {
			return nil
		}
		var targets []target
		if err := tx.Raw(targetsSQL + d.share()).Scan(&targets).Error; err != nil {
			return err
		}
		var (
			ids []any
			ds  []newDelivery
		)
		for _, r := range rows {
			var mine []newDelivery
			ready := true
			for _, t := range targets {
				if r.PetID <= t.AfterID {
					continue
				}
				if r.PetID > t.QueuedID {
					ready = false
					break
				}
				mine = append(mine, newDelivery{id: eventID(t.ID, r.PetID), endpoint: t.ID, pet: r.PetID, at: r.CreatedAt.UTC()})
			}
			if ready {
				ids, ds = append(ids, r.ID), append(ds, mine...)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		missing, err := d.notQueued(tx, ds)
		if err != nil {
			return err
		}
		if err := insertDeliveries(tx, missing, time.Now().UTC()); err != nil {
			return err
		}
		taken, queued = len(ids), len(missing)
		return tx.Exec("DELETE FROM webhook_outbox WHERE id IN ("+placeholders(len(ids))+")", ids...).Error
	})
	if err == nil {
		d.Metrics.queued.Add(float64(queued))
	}
	return taken, err
}

// share returns the clause that locks the targets takeLate reads until it commits, so that
// an endpoint deleted meanwhile is deleted after, with the deliveries queued for it: " LOCK IN
// SHARE MODE" on MySQL, none on SQLite, whose transactions run one at a time.
func (d *Dispatcher) share() string {
	if d.lock == "" {
		return ""
	}
	return " LOCK IN SHARE MODE"
}

// notQueued returns those of ds whose webhook-id no delivery has.
func (d *Dispatcher) notQueued(tx *gorm.DB, ds []newDelivery) ([]newDelivery, error) {
	queued := map[string]bool{}
	for i := 0; i < len(ds); i += insertBatch {
		batch := ds[i:min(len(ds), i+insertBatch)]
		ids := make([]any, len(batch))
		for j, nd := range batch {
			ids[j] = nd.id
		}
		var found []string
		if err := tx.Raw("SELECT id FROM webhook_deliveries WHERE id IN ("+placeholders(len(ids))+")", ids...).Scan(&found).Error; err != nil {
			return nil, err
		}
		for _, id := range found {
			queued[id] = true
		}
	}
	var out []newDelivery
	for _, nd := range ds {
		if !queued[nd.id] {
			out = append(out, nd)
		}
	}
	return out, nil
}
