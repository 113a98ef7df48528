// Package pets stores and reads the pets: the SQL of one pet and of the listing, and which
// database serves each read (a fresh replica, the primary, the request's transaction). Every
// error it returns is an *apierr.Error. The rules a pet must follow live in package models,
// and are checked before a pet gets here.
package pets

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"petstore/apierr"
	"petstore/models"
	"petstore/store"
)

// Store reads and writes the pets of one database. It is safe for concurrent use.
type Store struct {
	db         *gorm.DB
	replicas   *store.Replicas // nil: every read goes to db
	timeout    time.Duration   // of each statement: past it, UNAVAILABLE (503)
	insertSQL  string          // createPetSQL, or galeraCreatePetSQL
	listSQL    listStatements
	replicaSQL listStatements
	settle     *store.Settler // on MySQL (db.Settler), else nil
	pages      *PageCache     // nil: every page is read
	created    func()         // nil: no outbox; else told of each pet once it committed
}

// New returns the Store of db, whose statements each take at most timeout, and whose reads go
// to its replicas when one is fresh enough, its full settled pages kept in pages when it is not
// nil. On a Galera cluster (db.Galera) each insert and each page waits until its node has
// applied the cluster's earlier commits.
func New(db *store.DB, timeout time.Duration, pages *PageCache) *Store {
	s := &Store{db: db.DB, replicas: db.Replicas, timeout: timeout, insertSQL: createPetSQL,
		listSQL: newListStatements(db.Dialect, timeout), replicaSQL: replicaListStatements(timeout),
		settle: db.Settler, pages: pages}
	if db.Galera {
		s.insertSQL = galeraCreatePetSQL
		s.listSQL = galeraListStatements(timeout)
	}
	return s
}

// Outbox makes Create tell created of each pet once it committed (to wake the webhook
// dispatcher), and write a row of the webhooks outbox for each pet whose write was slow
// enough that a settled page may have passed it (a write of lateAfter or more, on MySQL): the
// dispatcher tails the pets table with settled pages (After), and takes these rows for the
// pets such a page skipped. It returns s.
func (s *Store) Outbox(created func()) *Store {
	s.created = created
	return s
}

// outboxSQL writes the outbox row of a late pet (webhooks.Dispatcher reads it).
const outboxSQL = "INSERT INTO webhook_outbox (pet_id, created_at) VALUES (?, ?)"

// createPetSQL inserts a pet: one statement, nothing else. InnoDB hands out its id before
// the row is in the table, so a page can meet a hole where a lower id is still on its way in;
// the listing settles such holes (store.Settler, settledPageOn) rather than the insert keeping
// ids in order, which would hold the table's AUTO-INC lock to the end of each statement.
const createPetSQL = "INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)"

// galeraCreatePetSQL inserts a pet on a Galera cluster: the insert first waits until its node
// has applied every write the cluster committed before it began (wsrep_sync_wait: 4 for the
// INSERT, 1 for its SELECT), so its id is above every pet committed before it, through any
// node; a lagging node would otherwise hand out ids below pets a cursor may have passed.
const galeraCreatePetSQL = "/*M! SET STATEMENT wsrep_sync_wait=5 FOR*/ INSERT INTO pets (name, category_id, status) SELECT ?, ?, ?"

// Create stores the pet that input describes, which the caller has validated
// (models.NewPet.Validate), on the transaction of ctx if it carries one (store.WithTx), with
// its outbox row, once it committed, when Outbox is on and the write was late (lateAfter).
// Outside a transaction each statement runs again while the server rolls it back
// (store.Retry), all attempts within the statement timeout; inside one the transaction's
// owner runs it all again (store.Transact). A connection lost under the INSERT is UNAVAILABLE
// saying that the pet may exist (store.WriteError). Once the pet committed, a write slow
// enough to make it late is told to the page cache (PageCache.committed).
func (s *Store) Create(ctx context.Context, input models.NewPet) (*models.Pet, error) {
	pet, start := input.Pet(), time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	insert := func(ctx context.Context) error {
		res, err := store.ConnPool(ctx, s.db).ExecContext(ctx, s.insertSQL, pet.Name, pet.CategoryID, pet.Status)
		if err == nil {
			pet.ID, err = res.LastInsertId()
		}
		return err
	}
	var err error
	if store.InTx(ctx) {
		err = insert(ctx)
	} else {
		err = store.Retry(ctx, insert)
	}
	if err != nil {
		return nil, store.WriteError(err)
	}
	if s.settle != nil && (s.pages != nil || s.created != nil) { // on SQLite every write commits in id order
		store.OnCommit(ctx, func() { s.committed(pet.ID, start) })
	}
	if s.created != nil {
		store.OnCommit(ctx, s.created)
	}
	return &pet, nil
}

// committed tells what waits for a late pet that the pet id, whose write began at start, has
// committed: the page cache (PageCache.committed) and the webhooks outbox (writeLate).
func (s *Store) committed(id int64, start time.Time) {
	if s.pages != nil {
		s.pages.committed(id, start)
	}
	if s.created != nil {
		s.writeLate(id, start)
	}
}

// writeLate writes the outbox row of the pet id, whose write began at start and has just
// committed, when that made it late. It runs before the answer is sent; a failure is logged,
// the pet being stored.
func (s *Store) writeLate(id int64, start time.Time) {
	if time.Since(start) < lateAfter {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	err := store.Retry(ctx, func(ctx context.Context) error {
		_, err := s.db.Statement.ConnPool.ExecContext(ctx, outboxSQL, id, start.UTC())
		return err
	})
	if err != nil {
		slog.ErrorContext(ctx, "pets: writing the outbox row of a late pet failed: its webhook deliveries may not be queued", "pet", id, "error", err)
	}
}

// petColumns are the columns a Pet is read from.
var petColumns = []string{"id", "name", "category_id", "status"}

// Get returns the pet with id, or NOT_FOUND. A fresh replica answers when it has the pet, or
// when id is settled on it (it lacks no pet up to its settled id: store.Replicas); otherwise
// the primary does, so that a pet created a moment ago is found at once. Inside a transaction
// the read runs in it.
func (s *Store) Get(ctx context.Context, id int64) (*models.Pet, error) {
	if rd, ok := s.replica(ctx); ok {
		rctx, cancel := rd.Context(ctx)
		pet, err := s.take(rctx, rd.DB, id)
		cancel()
		served := err == nil || (errors.Is(err, gorm.ErrRecordNotFound) && id <= rd.Settled)
		s.replicas.Release(rd, served, err)
		if served {
			return found(pet, err, id)
		}
	}
	pet, err := s.take(ctx, store.Conn(ctx, s.db), id)
	return found(pet, err, id)
}

// replica returns a replica for a read of ctx, or false when the read goes to the primary:
// there is no fresh replica, or ctx carries a transaction, whose reads run in it.
func (s *Store) replica(ctx context.Context) (store.Read, bool) {
	if store.InTx(ctx) {
		return store.Read{}, false
	}
	return s.replicas.Pick()
}

// take reads the pet with id on db.
func (s *Store) take(ctx context.Context, db *gorm.DB, id int64) (*models.Pet, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var pet models.Pet
	err := db.WithContext(ctx).Select(petColumns).Take(&pet, id).Error
	return &pet, err
}

// found returns the answer of take: the pet, NOT_FOUND or the database's error.
func found(pet *models.Pet, err error, id int64) (*models.Pet, error) {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apierr.New(apierr.NotFound, "pet %d not found", id)
	}
	if err != nil {
		return nil, store.APIError(err)
	}
	return pet, nil
}
