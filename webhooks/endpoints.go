// Package webhooks tells integrators' servers of every pet added: the endpoints each API key
// registers (Endpoints), the outbox every pet's transaction writes (store/pets), and the
// Dispatcher that turns it into deliveries, claims them across instances, signs them as the
// Standard Webhooks specification defines and retries them on a schedule.
package webhooks

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"petstore/apierr"
	"petstore/auth"
	"petstore/migrations"
	"petstore/store"
)

// PetCreated is the one event type: a pet was added, through REST or GraphQL.
const PetCreated = "pet.created"

// EventTypes are the event types an endpoint may subscribe to.
var EventTypes = []string{PetCreated}

// planLimits are the endpoints each plan's key may register; enterprise keys as business.
var planLimits = map[string]int{auth.Free.Name: 1, auth.Pro.Name: 5, auth.Business.Name: 20, auth.Enterprise: 20}

// Endpoint is a receiver registered by an API key. Secret is set only when it was just
// created or rotated: it is never listed.
type Endpoint struct {
	ID         string     `json:"id"`
	URL        string     `json:"url"`
	Events     []string   `json:"events"`
	Secret     string     `json:"secret,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	Disabled   bool       `json:"disabled"`
	DisabledAt *time.Time `json:"disabledAt,omitempty"`
}

// Endpoints registers, lists, rotates and removes the endpoints of API keys. It is safe for
// concurrent use.
type Endpoints struct {
	db      *gorm.DB
	mysql   bool
	addrs   Addresses
	tail    Tail          // the settled pages of the pets table, which replays read
	grace   time.Duration // how long a rotated secret still signs
	timeout time.Duration // of each statement
}

// DefaultGrace is how long a replaced secret still signs each delivery after a rotation.
const DefaultGrace = 24 * time.Hour

// NewEndpoints returns the Endpoints of db, whose urls addrs checks, whose replays read the pets
// with tail, whose rotated secrets sign for grace, and whose statements take at most timeout.
func NewEndpoints(db *store.DB, addrs Addresses, tail Tail, grace, timeout time.Duration) *Endpoints {
	return &Endpoints{db: db.DB, mysql: db.Dialect == migrations.MySQL, addrs: addrs, tail: tail, grace: grace, timeout: timeout}
}

// endpointColumns are the columns an Endpoint is listed from.
const endpointColumns = "id, url, events, created_at, disabled_at"

// endpointRow is a row of webhook_endpoints as listed.
type endpointRow struct {
	ID         string
	URL        string
	Events     string
	CreatedAt  time.Time
	DisabledAt *time.Time
}

// endpoint returns the row as the API shows it.
func (r endpointRow) endpoint() Endpoint {
	e := Endpoint{ID: r.ID, URL: r.URL, Events: strings.Split(r.Events, ","), CreatedAt: r.CreatedAt.UTC(), Disabled: r.DisabledAt != nil}
	if r.DisabledAt != nil {
		at := r.DisabledAt.UTC()
		e.DisabledAt = &at
	}
	return e
}

// Create registers the endpoint of p at rawURL for events, and returns it with its secret.
// It gets the pets above the highest id at that moment (after_id, where its queued_id
// begins).
// A url that is missing or not allowed, an event type that does not exist and an endpoint
// past the plan's limit are INVALID_REQUEST.
func (s *Endpoints) Create(ctx context.Context, p *auth.Principal, rawURL string, events []string) (Endpoint, error) {
	events, err := checkEvents(events)
	if err != nil {
		return Endpoint{}, err
	}
	u, err := s.addrs.Check(ctx, rawURL)
	if err != nil {
		return Endpoint{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	e := Endpoint{ID: "ep_" + rand.Text(), URL: u.String(), Events: events, Secret: NewSecret(), CreatedAt: now}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	limit := planLimits[p.Plan.Name]
	err = store.Transact(ctx, s.db, func(tx *gorm.DB) error {
		if s.mysql { // one key's registrations one at a time, so that none passes the limit
			if err := tx.Exec("SELECT id FROM api_keys WHERE id = ? FOR UPDATE", p.KeyID).Error; err != nil {
				return err
			}
		}
		var n int64
		if err := tx.Raw("SELECT COUNT(*) FROM webhook_endpoints WHERE key_id = ?", p.KeyID).Scan(&n).Error; err != nil {
			return err
		}
		if n >= int64(limit) {
			return apierr.Invalid("the %s plan's limit of webhook endpoints per key is %d, and this key has %d; delete one first", p.Plan.Name, limit, n)
		}
		var after int64
		if err := tx.Raw("SELECT COALESCE(MAX(id), 0) FROM pets").Scan(&after).Error; err != nil {
			return err
		}
		return tx.Exec("INSERT INTO webhook_endpoints (id, key_id, url, events, secret, created_at, after_id, queued_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			e.ID, p.KeyID, e.URL, strings.Join(e.Events, ","), e.Secret, now, after, after).Error
	})
	return e, apiError(err)
}

// checkEvents returns events without repeats, or INVALID_REQUEST when it is empty or names a
// type that does not exist.
func checkEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, apierr.Invalid("events is required: a non-empty array of event types (%s)", strings.Join(EventTypes, ", "))
	}
	var out []string
	for _, ev := range events {
		if !slices.Contains(EventTypes, ev) {
			return nil, apierr.Invalid("events: unknown event type %q; known: %s", ev, strings.Join(EventTypes, ", "))
		}
		if !slices.Contains(out, ev) {
			out = append(out, ev)
		}
	}
	return out, nil
}

// List returns the endpoints of the key keyID, oldest first, without their secrets.
func (s *Endpoints) List(ctx context.Context, keyID int64) ([]Endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var rows []endpointRow
	err := s.db.WithContext(ctx).Raw("SELECT "+endpointColumns+" FROM webhook_endpoints WHERE key_id = ? ORDER BY created_at, id", keyID).Scan(&rows).Error
	if err != nil {
		return nil, store.APIError(err)
	}
	out := make([]Endpoint, len(rows))
	for i, r := range rows {
		out[i] = r.endpoint()
	}
	return out, nil
}

// Get returns the endpoint id of the key keyID, or NOT_FOUND: another key's endpoints are
// not found either.
func (s *Endpoints) Get(ctx context.Context, keyID int64, id string) (Endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var rows []endpointRow
	err := s.db.WithContext(ctx).Raw("SELECT "+endpointColumns+" FROM webhook_endpoints WHERE id = ? AND key_id = ?", id, keyID).Scan(&rows).Error
	if err != nil {
		return Endpoint{}, store.APIError(err)
	}
	if len(rows) == 0 {
		return Endpoint{}, notFound(id)
	}
	return rows[0].endpoint(), nil
}

// Delete removes the endpoint id of the key keyID and its deliveries, or answers NOT_FOUND.
func (s *Endpoints) Delete(ctx context.Context, keyID int64, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return apiError(store.Transact(ctx, s.db, func(tx *gorm.DB) error {
		res := tx.Exec("DELETE FROM webhook_endpoints WHERE id = ? AND key_id = ?", id, keyID)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return notFound(id)
		}
		return tx.Exec("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", id).Error
	}))
}

// Rotate gives the endpoint id of the key keyID a new secret and returns the endpoint with
// it; the secret it replaces still signs every delivery, beside the new one, for the grace
// period.
func (s *Endpoints) Rotate(ctx context.Context, keyID int64, id string) (Endpoint, error) {
	secret, until := NewSecret(), time.Now().UTC().Add(s.grace)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// old_secret takes the secret's value before the statement: MySQL assigns left to right,
	// SQLite from the row as it was.
	res := s.db.WithContext(ctx).Exec("UPDATE webhook_endpoints SET old_secret = secret, old_secret_until = ?, secret = ? WHERE id = ? AND key_id = ?",
		until, secret, id, keyID)
	if res.Error != nil {
		return Endpoint{}, store.APIError(res.Error)
	}
	if res.RowsAffected == 0 {
		return Endpoint{}, notFound(id)
	}
	e, err := s.Get(ctx, keyID, id)
	e.Secret = secret
	return e, err
}

// notFound is the answer about an endpoint that the key does not have.
func notFound(id string) error {
	return apierr.New(apierr.NotFound, "webhook endpoint %q not found", id)
}

// apiError returns err as an API error: itself when it is one, else the store's.
func apiError(err error) error {
	var e *apierr.Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return store.APIError(err)
}
