package webhooks

import (
	"context"
	"crypto/rand"
	"strings"
	"time"

	"gorm.io/gorm"

	"petstore/apierr"
	"petstore/models"
	"petstore/store"
)

// Delivery is one event sent, or to be sent, to one endpoint, as GET
// /v1/webhooks/{webhookId}/deliveries lists it. ID is its webhook-id header.
type Delivery struct {
	ID            string     `json:"id"`
	Event         string     `json:"event"`
	Cursor        string     `json:"cursor"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	LastStatus    *int       `json:"lastStatus"`
	LastError     string     `json:"lastError,omitempty"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	CreatedAt     time.Time  `json:"createdAt"`
}

// The states of a delivery.
const (
	statusPending   = "pending"
	statusDelivered = "delivered"
	statusFailed    = "failed"
)

// RecentDeliveries is how many deliveries Deliveries lists.
const RecentDeliveries = 100

// Deliveries returns the most recent deliveries of the endpoint id of the key keyID, newest
// first, or NOT_FOUND.
func (s *Endpoints) Deliveries(ctx context.Context, keyID int64, id string) ([]Delivery, error) {
	if _, err := s.Get(ctx, keyID, id); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var rows []struct {
		ID            string
		EventType     string
		PetID         int64
		Status        string
		Attempts      int
		LastStatus    *int
		LastError     string
		NextAttemptAt *time.Time
		CreatedAt     time.Time
	}
	err := s.db.WithContext(ctx).Raw("SELECT id, event_type, pet_id, status, attempts, last_status, last_error, next_attempt_at, created_at"+
		" FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY created_at DESC, id DESC LIMIT ?", id, RecentDeliveries).Scan(&rows).Error
	if err != nil {
		return nil, store.APIError(err)
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = Delivery{ID: r.ID, Event: r.EventType, Cursor: models.EncodeCursor(r.PetID), Status: r.Status, Attempts: r.Attempts,
			LastStatus: r.LastStatus, LastError: r.LastError, CreatedAt: r.CreatedAt.UTC()}
		if r.NextAttemptAt != nil && r.Status == statusPending {
			at := r.NextAttemptAt.UTC()
			out[i].NextAttemptAt = &at
		}
	}
	return out, nil
}

// Replayed is the answer of a replay: the deliveries queued, the cursor of the last pet
// queued (to replay from next when More), and whether more pets follow it.
type Replayed struct {
	Queued int     `json:"queued"`
	Cursor *string `json:"cursor"`
	More   bool    `json:"more"`
}

// ReplayBatch is the most pets one replay queues.
const ReplayBatch = 1000

// Replay queues, for the endpoint id of the key keyID, a new delivery of pet.created for each
// pet after the cursor after, at most ReplayBatch of them, read as a settled page (Tail), so
// that the cursor it answers passes no pet that can still commit but a late one (as a
// listing's). It enables the endpoint again if it was disabled: the endpoint then gets the
// pets above the page when no more follow it, else above the highest id, the next replays
// bringing those between. A missing or foreign cursor is INVALID_REQUEST; an unknown endpoint,
// or one deleted while the page was read, NOT_FOUND.
func (s *Endpoints) Replay(ctx context.Context, keyID int64, id string, after *string) (Replayed, error) {
	var r Replayed
	if after == nil {
		return r, apierr.Invalid("after is required: the cursor of the last pet your server has (a Link header, an endCursor or a delivery's data.cursor)")
	}
	from, err := models.DecodeCursor(after)
	if err != nil {
		return r, err
	}
	if _, err := s.Get(ctx, keyID, id); err != nil {
		return r, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	page, more, err := s.tail(ctx, from, ReplayBatch, nil)
	if err != nil {
		return r, apiError(err)
	}
	r = Replayed{Queued: len(page), More: more}
	upTo := from // the page's last pet: every pet after the cursor up to it is replayed
	if len(page) > 0 {
		upTo = page[len(page)-1].ID
		r.Cursor = new(models.EncodeCursor(upTo))
	}
	err = store.Transact(ctx, s.db, func(tx *gorm.DB) error {
		if err := lockEndpoint(tx, s.mysql, keyID, id); err != nil {
			return err
		}
		now := time.Now().UTC()
		ds := make([]newDelivery, len(page))
		for i, p := range page {
			ds[i] = newDelivery{endpoint: id, pet: p.ID, at: now}
		}
		if err := insertDeliveries(tx, ds, now); err != nil {
			return err
		}
		var last int64
		if err := tx.Raw("SELECT COALESCE(MAX(id), 0) FROM pets").Scan(&last).Error; err != nil {
			return err
		}
		queued := min(upTo, last)
		if more {
			queued = last
		}
		err := tx.Exec("UPDATE webhook_endpoints SET after_id = ?, queued_id = ? WHERE id = ? AND disabled_at IS NOT NULL",
			queued, queued, id).Error
		if err != nil {
			return err
		}
		return tx.Exec("UPDATE webhook_endpoints SET disabled_at = NULL, failing_since = NULL WHERE id = ?", id).Error
	})
	return r, apiError(err)
}

// lockEndpoint locks, in tx, the endpoint id of the key keyID, or answers NOT_FOUND when it
// is gone: a Delete meanwhile then waits for tx, and removes what tx queued, rather than leave
// deliveries that no endpoint sends. On SQLite, whose transactions run one at a time, it only
// reads.
func lockEndpoint(tx *gorm.DB, mysql bool, keyID int64, id string) error {
	q := "SELECT COUNT(*) FROM webhook_endpoints WHERE id = ? AND key_id = ?"
	if mysql {
		q += " FOR UPDATE"
	}
	var n int64
	if err := tx.Raw(q, id, keyID).Scan(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return notFound(id)
	}
	return nil
}

// newDelivery is a delivery to insert: of the pet created at to the endpoint.
type newDelivery struct {
	id       string
	endpoint string
	pet      int64
	at       time.Time
}

// insertBatch is the most rows one INSERT of insertDeliveries writes.
const insertBatch = 500

// insertDeliveries inserts ds as pending deliveries due at due, each given its webhook-id
// when it has none.
func insertDeliveries(tx *gorm.DB, ds []newDelivery, due time.Time) error {
	now := time.Now().UTC()
	for len(ds) > 0 {
		n := min(len(ds), insertBatch)
		var sql strings.Builder
		sql.WriteString("INSERT INTO webhook_deliveries (id, endpoint_id, event_type, pet_id, event_at, status, next_attempt_at, created_at) VALUES ")
		args := make([]any, 0, n*8)
		for i := range ds[:n] {
			if i > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
			if ds[i].id == "" {
				ds[i].id = "msg_" + rand.Text()
			}
			args = append(args, ds[i].id, ds[i].endpoint, PetCreated, ds[i].pet, ds[i].at, statusPending, due, now)
		}
		if err := tx.Exec(sql.String(), args...).Error; err != nil {
			return err
		}
		ds = ds[n:]
	}
	return nil
}
