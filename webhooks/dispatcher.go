package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"petstore/migrations"
	"petstore/store"
)

// DefaultSchedule is the wait before each retry of a failed delivery, as Svix's: the first
// attempt goes at once, the last retry about 33 hours after it; then the delivery has failed.
var DefaultSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Options are the settings of a Dispatcher.
type Options struct {
	Schedule  []time.Duration // waits before each retry (PETSTORE_WEBHOOK_RETRY_SCHEDULE)
	Timeout   time.Duration   // a receiver's 2xx must come within it (PETSTORE_WEBHOOK_TIMEOUT)
	Addresses Addresses       // where deliveries may go
	DBTimeout time.Duration   // of each statement
	Poll      time.Duration   // how often the pets, the outbox and the due retries are read besides wake-ups; 0: 1 s
	Tail      Tail            // the settled pages of the pets table
}

// maxInFlight bounds the deliveries one instance sends at a time: a slow receiver holds at
// most maxPerEndpoint of them up to the timeout, never the pets' requests.
const maxInFlight = 512

// maxPerHost bounds the connections to one receiver's host, kept alive between deliveries:
// more deliveries to it wait for one, rather than dial anew.
const maxPerHost = 64

// Dispatcher turns the pets added into deliveries and sends them: every instance runs one,
// and they share the work through the database. It tails the pets table: each endpoint's
// queued_id says up to which pet its deliveries are queued, and a fan-out reads the settled
// page after it and queues the page's pets in one transaction (fanOut); the rare pet whose
// write was late, which a settled page may have passed, comes from the outbox (takeLate). A delivery is claimed by moving its next attempt
// past the time its sending may take (the lease): another instance takes it only once the
// lease ran out, which is how a delivery of an instance that died is sent again. Claims lock
// their rows with FOR UPDATE SKIP LOCKED where the engine has it (MariaDB 10.6, MySQL 8), so
// that instances claiming at once take different rows; on Galera two nodes' claims of one row
// conflict at commit, and the later is rolled back and tries again. Each endpoint has at most
// maxPerEndpoint deliveries of an instance in flight, so that a slow receiver delays only its
// own (lanes).
type Dispatcher struct {
	db       *gorm.DB
	lock     string // the locking clause of claims: "", " FOR UPDATE" or " FOR UPDATE SKIP LOCKED"
	opts     Options
	client   *http.Client
	wake     chan struct{}
	room     chan struct{} // deliveries put back have room again
	lanes    lanes         // the deliveries held, by endpoint, and those in flight
	results  chan result
	Metrics  *Metrics
	inflight sync.WaitGroup
	behind   time.Time // since when fan-outs have not reached the newest pet; zero when they have (Run's alone)
	targeted bool      // the last look at the endpoints found one to queue for (Run's alone)
	lookedAt time.Time // when the endpoints were last read (Run's alone)
}

// NewDispatcher returns the Dispatcher of db with opts.
func NewDispatcher(ctx context.Context, db *store.DB, opts Options) (*Dispatcher, error) {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	d := &Dispatcher{db: db.DB, opts: opts, wake: make(chan struct{}, 1), room: make(chan struct{}, 1),
		results: make(chan result, maxInFlight), Metrics: newMetrics()}
	d.client = &http.Client{
		Transport: &http.Transport{DialContext: opts.Addresses.DialContext, MaxConnsPerHost: maxPerHost, MaxIdleConnsPerHost: maxPerHost,
			IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if db.Dialect == migrations.MySQL {
		var version string
		if err := db.WithContext(ctx).Raw("SELECT VERSION()").Scan(&version).Error; err != nil {
			return nil, err
		}
		d.lock = lockClause(version)
	}
	return d, nil
}

// lockClause returns the locking clause of claims on the MySQL server of version: SKIP
// LOCKED from MariaDB 10.6 and MySQL 8.0 on, else a plain FOR UPDATE.
func lockClause(version string) string {
	var major, minor int
	_, _ = fmt.Sscanf(version, "%d.%d", &major, &minor)
	maria := strings.Contains(strings.ToLower(version), "mariadb")
	if (maria && (major > 10 || major == 10 && minor >= 6)) || (!maria && major >= 8) {
		return " FOR UPDATE SKIP LOCKED"
	}
	return " FOR UPDATE"
}

// Wake makes the dispatcher read the pets now: a pet of this instance committed.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// idleLook is how often at most, while the last look found no endpoint, the pets' wake-ups
// read the endpoints again (a wake-up sooner puts its look off until then): a pet then costs
// its INSERT alone, not a read of the endpoints besides, and an endpoint registered on any
// instance meanwhile gets its first pets within idleLook.
const idleLook = 100 * time.Millisecond

// coalesce is how long a wake-up waits for more pets to commit while they come in bursts (the
// last fan-out queued more than one), so that a burst is turned into deliveries in one
// transaction rather than one each; a pet that comes alone is queued at once.
const coalesce = 20 * time.Millisecond

// Run sends deliveries until ctx ends, then waits for those in flight. A wake-up turns the
// new pets into deliveries and sends them; every poll it also reads the pets of other
// instances, takes the outbox and claims the due deliveries (retries, deliveries put back
// for fairness, and deliveries whose instance died), and it claims besides as soon as
// deliveries put back have room again. It never waits for a receiver (dispatch). While no
// endpoint exists, a wake-up reads the endpoints at most every idleLook.
func (d *Dispatcher) Run(ctx context.Context) {
	var writer sync.WaitGroup
	writer.Go(func() { d.writeResults() })
	tick := time.NewTicker(d.opts.Poll)
	defer tick.Stop()
	var (
		lastAge time.Time
		later   <-chan time.Time // the look a wake-up put off (idleLook)
	)
	for due, reclaim := true, false; ; {
		var burst bool
		if !reclaim {
			if wait := idleLook - time.Since(d.lookedAt); due || d.targeted || wait <= 0 {
				burst, later = d.fanOutAll(ctx), nil
			} else if later == nil {
				later = time.After(wait)
			}
		}
		if due {
			d.takeLateAll(ctx)
		}
		if due || reclaim {
			d.claimAll(ctx)
		}
		if time.Since(lastAge) >= 5*time.Second {
			d.measureAge(ctx)
			lastAge = time.Now()
		}
		select {
		case <-ctx.Done():
			d.inflight.Wait()
			close(d.results)
			writer.Wait()
			return
		case <-d.wake:
			due, reclaim = false, false
			if burst {
				select {
				case <-time.After(coalesce):
				case <-ctx.Done():
				}
			}
		case <-later:
			due, reclaim, later = false, false, nil
		case <-tick.C:
			due, reclaim = true, false
		case <-d.room:
			due, reclaim = false, true
		}
	}
}

// fanOutAll turns the pets up to the newest settled one into deliveries and sends them, and
// reports whether they were more than one.
func (d *Dispatcher) fanOutAll(ctx context.Context) (burst bool) {
	var first int64
	for ctx.Err() == nil {
		jobs, more, err := d.fanOut(ctx)
		if err != nil || more {
			if d.behind.IsZero() {
				d.behind = time.Now()
			}
		}
		if err != nil {
			slog.WarnContext(ctx, "webhooks: queueing the pets added failed", "error", err)
			return burst
		}
		for _, j := range jobs {
			if first == 0 {
				first = j.PetID
			}
			burst = burst || j.PetID != first
		}
		d.dispatch(ctx, jobs)
		if !more {
			d.behind = time.Time{}
			return burst
		}
	}
	return burst
}

// takeLateAll takes the whole outbox.
func (d *Dispatcher) takeLateAll(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := d.takeLate(ctx)
		if err != nil {
			slog.WarnContext(ctx, "webhooks: reading the outbox failed", "error", err)
			return
		}
		if n < fanOutBatch {
			return
		}
	}
}

// claimAll claims and sends every due delivery there is room for.
func (d *Dispatcher) claimAll(ctx context.Context) {
	for ctx.Err() == nil {
		free, full := d.lanes.room()
		if free <= 0 {
			return
		}
		n := min(free, claimBatch)
		jobs, err := d.claim(ctx, n, full)
		if err != nil {
			slog.WarnContext(ctx, "webhooks: claiming deliveries failed", "error", err)
			return
		}
		d.dispatch(ctx, jobs)
		if len(jobs) < n {
			return
		}
	}
}

// measureAge sets the age of the oldest event not yet delivered: in the outbox, pending, or
// not yet queued while fan-outs are behind.
func (d *Dispatcher) measureAge(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	defer cancel()
	db, err := d.db.DB()
	if err != nil {
		return
	}
	var age time.Duration
	if !d.behind.IsZero() {
		age = time.Since(d.behind)
	}
	for _, q := range []string{"SELECT created_at FROM webhook_outbox ORDER BY id LIMIT 1",
		"SELECT created_at FROM webhook_deliveries WHERE status = 'pending' ORDER BY created_at LIMIT 1"} {
		var at time.Time
		switch err := db.QueryRowContext(ctx, q).Scan(&at); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return
		default:
			age = max(age, time.Since(at))
		}
	}
	d.Metrics.oldest.Set(age.Seconds())
}
