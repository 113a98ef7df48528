package webhooks

import (
	"context"
	"time"

	"gorm.io/gorm"

	"petstore/store"
)

// record writes the results of a batch of attempts: the acknowledged ones delivered, with
// their endpoints no longer failing; each failed one due again after the schedule's next
// wait, or failed once the schedule is spent, its endpoint then disabled when it failed for
// the whole schedule.
func (d *Dispatcher) record(batch []result) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.DBTimeout)
	defer cancel()
	now := time.Now().UTC()
	byStatus := map[int][]any{}
	okEndpoints := map[string]bool{}
	for _, r := range batch {
		if r.err == "" {
			byStatus[r.status] = append(byStatus[r.status], r.job.ID)
			okEndpoints[r.job.EndpointID] = true
		}
	}
	for status, ids := range byStatus {
		err := store.Retry(ctx, func(ctx context.Context) error {
			return d.db.WithContext(ctx).Exec("UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, last_status = ?, last_error = '', next_attempt_at = NULL"+
				" WHERE id IN ("+placeholders(len(ids))+")", append([]any{statusDelivered, status}, ids...)...).Error
		})
		if err != nil {
			return err
		}
		d.Metrics.delivered.Add(float64(len(ids)))
	}
	if err := d.notFailing(ctx, okEndpoints); err != nil {
		return err
	}
	for _, r := range batch {
		if r.err != "" {
			if err := d.recordFailure(ctx, r, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// notFailing clears the failing_since of those of the endpoints ids that have one: each had a
// success. It reads them first, rather than trusting what a job saw when it was queued or
// claimed, since another attempt may have failed in between; a plain read, so that the common
// case, no endpoint failing, locks no row.
func (d *Dispatcher) notFailing(ctx context.Context, ids map[string]bool) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, 0, len(ids))
	for id := range ids {
		args = append(args, id)
	}
	var failing []string
	err := d.db.WithContext(ctx).Raw("SELECT id FROM webhook_endpoints WHERE failing_since IS NOT NULL AND id IN ("+placeholders(len(args))+")", args...).
		Scan(&failing).Error
	if err != nil || len(failing) == 0 {
		return err
	}
	args = args[:0]
	for _, id := range failing {
		args = append(args, id)
	}
	return d.db.WithContext(ctx).Exec("UPDATE webhook_endpoints SET failing_since = NULL WHERE failing_since IS NOT NULL AND id IN ("+
		placeholders(len(args))+")", args...).Error
}

// recordFailure writes the failed attempt r.
func (d *Dispatcher) recordFailure(ctx context.Context, r result, now time.Time) error {
	attempts := r.job.Attempts + 1
	var last *int
	if r.status != 0 {
		last = &r.status
	}
	msg := r.err
	if len(msg) > 255 {
		msg = msg[:255]
	}
	final := attempts > len(d.opts.Schedule)
	err := store.Transact(ctx, d.db, func(tx *gorm.DB) error {
		if err := tx.Exec("UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since IS NULL", now, r.job.EndpointID).Error; err != nil {
			return err
		}
		if !final {
			return tx.Exec("UPDATE webhook_deliveries SET attempts = ?, last_status = ?, last_error = ?, next_attempt_at = ? WHERE id = ?",
				attempts, last, msg, now.Add(d.opts.Schedule[attempts-1]), r.job.ID).Error
		}
		err := tx.Exec("UPDATE webhook_deliveries SET status = ?, attempts = ?, last_status = ?, last_error = ?, next_attempt_at = NULL WHERE id = ?",
			statusFailed, attempts, last, msg, r.job.ID).Error
		if err != nil {
			return err
		}
		return d.disableIfFailing(tx, r.job.EndpointID, now)
	})
	if err == nil && final {
		d.Metrics.failed.Inc()
	} else if err == nil {
		d.Metrics.retried.Inc()
	}
	return err
}

// disableIfFailing disables the endpoint id when it has been failing, without a success, for
// at least the whole schedule, and fails its pending deliveries.
func (d *Dispatcher) disableIfFailing(tx *gorm.DB, id string, now time.Time) error {
	var total time.Duration
	for _, w := range d.opts.Schedule {
		total += w
	}
	res := tx.Exec("UPDATE webhook_endpoints SET disabled_at = ? WHERE id = ? AND disabled_at IS NULL AND failing_since <= ?", now, id, now.Add(-total))
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	return tx.Exec("UPDATE webhook_deliveries SET status = ?, last_error = ?, next_attempt_at = NULL WHERE endpoint_id = ? AND status = ?",
		statusFailed, "the endpoint was disabled: it failed for the whole retry schedule", id, statusPending).Error
}
