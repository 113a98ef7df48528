package webhooks

import (
	"context"
	"strings"
	"time"

	"gorm.io/gorm"

	"petstore/models"
	"petstore/store"
)

// fanOutBatch and claimBatch are the most outbox rows and deliveries one statement takes.
const (
	fanOutBatch = 500
	claimBatch  = 200
)

// fanOut takes up to fanOutBatch rows of the outbox, queues one delivery of each to every
// enabled endpoint subscribed to pet.created whose after_id is below the pet's id, claimed
// by this instance, and deletes the rows, in one transaction. It returns the deliveries to
// send and how many rows it took.
func (d *Dispatcher) fanOut(ctx context.Context) ([]job, int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	defer cancel()
	var jobs []job
	var taken int
	err := store.Transact(ctx, d.db, func(tx *gorm.DB) error {
		var events []struct {
			ID        int64
			PetID     int64
			CreatedAt time.Time
		}
		if err := tx.Raw("SELECT id, pet_id, created_at FROM webhook_outbox ORDER BY id LIMIT ?"+d.lock, fanOutBatch).Scan(&events).Error; err != nil {
			return err
		}
		jobs, taken = nil, len(events)
		if taken == 0 {
			return nil
		}
		var endpoints []struct {
			EndpointState
			ID      string
			URL     string
			AfterID int64
		}
		err := tx.Raw("SELECT id, url, secret, old_secret, old_secret_until, failing_since, after_id FROM webhook_endpoints"+
			" WHERE disabled_at IS NULL AND events LIKE ?", "%"+PetCreated+"%").Scan(&endpoints).Error
		if err != nil {
			return err
		}
		ids, petIDs := make([]any, len(events)), make([]any, len(events))
		for i, ev := range events {
			ids[i], petIDs[i] = ev.ID, ev.PetID
		}
		var pets []models.Pet
		if len(endpoints) > 0 {
			if err := tx.Raw("SELECT id, name, category_id, status FROM pets WHERE id IN ("+placeholders(len(petIDs))+")", petIDs...).Scan(&pets).Error; err != nil {
				return err
			}
		}
		byID := make(map[int64]models.Pet, len(pets))
		for _, p := range pets {
			byID[p.ID] = p
		}
		var ds []newDelivery
		for _, ev := range events {
			for _, e := range endpoints {
				if pet, ok := byID[ev.PetID]; ok && ev.PetID > e.AfterID {
					ds = append(ds, newDelivery{endpoint: e.ID, pet: ev.PetID, at: ev.CreatedAt})
					jobs = append(jobs, job{EndpointID: e.ID, PetID: pet.ID, EventAt: ev.CreatedAt, URL: e.URL, EndpointState: e.EndpointState,
						Name: pet.Name, CategoryID: pet.CategoryID, Status: pet.Status})
				}
			}
		}
		if err := insertDeliveries(tx, ds, time.Now().UTC().Add(d.lease())); err != nil {
			return err
		}
		for i := range jobs {
			jobs[i].ID = ds[i].id
		}
		return tx.Exec("DELETE FROM webhook_outbox WHERE id IN ("+placeholders(len(ids))+")", ids...).Error
	})
	if err != nil {
		return nil, 0, err
	}
	d.Metrics.queued.Add(float64(len(jobs)))
	return jobs, taken, nil
}

// EndpointState is what signs an endpoint's deliveries, and since when it fails; exported
// for GORM, which scans only exported embedded structs.
type EndpointState struct {
	Secret         string
	OldSecret      *string
	OldSecretUntil *time.Time
	FailingSince   *time.Time
}

// job is a claimed delivery with what its request needs.
type job struct {
	ID         string
	EndpointID string
	PetID      int64
	EventAt    time.Time
	Attempts   int
	URL        string
	EndpointState
	Name       string
	CategoryID int64
	Status     *models.PetStatus
}

// lease is how long a claimed delivery stays with its instance: past it, any instance may
// send it again.
func (d *Dispatcher) lease() time.Duration { return 2*d.opts.Timeout + d.opts.DBTimeout }

// claim claims up to n due deliveries, moving their next attempt past the lease, and returns
// them with their endpoints' urls and secrets and their pets.
func (d *Dispatcher) claim(ctx context.Context, n int) ([]job, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	defer cancel()
	var ids []any
	err := store.Transact(ctx, d.db, func(tx *gorm.DB) error {
		now := time.Now().UTC()
		var due []string
		err := tx.Raw("SELECT id FROM webhook_deliveries WHERE status = ? AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?"+d.lock,
			statusPending, now, n).Scan(&due).Error
		if err != nil || len(due) == 0 {
			ids = nil
			return err
		}
		ids = make([]any, 0, len(due)+1)
		ids = append(ids, now.Add(d.lease()))
		for _, id := range due {
			ids = append(ids, id)
		}
		return tx.Exec("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id IN ("+placeholders(len(due))+")", ids...).Error
	})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var jobs []job
	err = d.db.WithContext(ctx).Raw("SELECT d.id, d.endpoint_id, d.pet_id, d.event_at, d.attempts, e.url, e.secret, e.old_secret, e.old_secret_until, e.failing_since,"+
		" p.name, p.category_id, p.status FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN pets p ON p.id = d.pet_id"+
		" WHERE d.id IN ("+placeholders(len(ids)-1)+")", ids[1:]...).Scan(&jobs).Error
	return jobs, err
}

// placeholders returns n comma-separated question marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
