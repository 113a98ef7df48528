package webhooks

import (
	"context"
	"strings"
	"time"

	"gorm.io/gorm"

	"petstore/models"
	"petstore/store"
)

// claimBatch is the most deliveries one claim takes.
const claimBatch = 200

// EndpointState is what signs an endpoint's deliveries; exported for GORM, which scans only
// exported embedded structs.
type EndpointState struct {
	Secret         string
	OldSecret      *string
	OldSecretUntil *time.Time
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
	until      time.Time // when its lease ends
}

// lease is how long a claimed delivery stays with its instance: past it, any instance may
// send it again.
func (d *Dispatcher) lease() time.Duration { return 2*d.opts.Timeout + d.opts.DBTimeout }

// claim claims up to n due deliveries of endpoints other than those of skip, moving their next
// attempt past the lease, and returns them with their endpoints' urls and secrets and their
// pets.
func (d *Dispatcher) claim(ctx context.Context, n int, skip []any) ([]job, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	defer cancel()
	var (
		ids   []any
		until time.Time
	)
	err := store.Transact(ctx, d.db, func(tx *gorm.DB) error {
		now := time.Now().UTC()
		var due []string
		q, args := "SELECT id FROM webhook_deliveries WHERE status = ? AND next_attempt_at <= ?", []any{statusPending, now}
		if len(skip) > 0 {
			q, args = q+" AND endpoint_id NOT IN ("+placeholders(len(skip))+")", append(args, skip...)
		}
		err := tx.Raw(q+" ORDER BY next_attempt_at LIMIT ?"+d.lock, append(args, n)...).Scan(&due).Error
		if err != nil || len(due) == 0 {
			ids = nil
			return err
		}
		ids = make([]any, 0, len(due)+1)
		until = now.Add(d.lease())
		ids = append(ids, until)
		for _, id := range due {
			ids = append(ids, id)
		}
		return tx.Exec("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id IN ("+placeholders(len(due))+")", ids...).Error
	})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var jobs []job
	err = d.db.WithContext(ctx).Raw("SELECT d.id, d.endpoint_id, d.pet_id, d.event_at, d.attempts, e.url, e.secret, e.old_secret, e.old_secret_until,"+
		" p.name, p.category_id, p.status FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN pets p ON p.id = d.pet_id"+
		" WHERE d.id IN ("+placeholders(len(ids)-1)+")", ids[1:]...).Scan(&jobs).Error
	for i := range jobs {
		jobs[i].until = until
	}
	return jobs, err
}

// placeholders returns n comma-separated question marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
