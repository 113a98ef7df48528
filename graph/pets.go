package graph

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"petstore/apierr"
	"petstore/models"
	"petstore/store"
)

// This file stores and reads single pets; pages.go lists them. The rules a pet must follow
// live in package models.

// createPetSQL inserts a pet: one statement, nothing else. InnoDB hands out its id before
// the row is in the table, so a page can meet a hole where a lower id is still on its way in;
// the listing settles such holes (store.Settler, graph/pages.go settledPage) rather than the
// insert keeping ids in order: INSERT ... SELECT, which holds the table's AUTO-INC lock to the
// end of the statement under innodb_autoinc_lock_mode 0 and 1, did that at the cost of a
// quarter of the POSTs a second (MariaDB 10.11, 16 connections: 75-85% more server CPU per
// insert), and under mode 2 (MySQL 8's default) not at all.
const createPetSQL = "INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)"

// galeraCreatePetSQL inserts a pet on a Galera cluster: the insert first waits until its node
// has applied every write the cluster committed before it began (wsrep_sync_wait: 4 for the
// INSERT, 1 for its SELECT), so its id is above every pet committed before it, through any
// node. Without the wait, a node that lags in applying the others' writes (seconds, on a
// loaded machine) hands out ids below pets that a cursor may have passed already, and the
// settler's delay would have to outlast the lag, not just the write.
const galeraCreatePetSQL = "/*M! SET STATEMENT wsrep_sync_wait=5 FOR*/ INSERT INTO pets (name, category_id, status) SELECT ?, ?, ?"

// create validates input and stores the pet it describes. It returns INVALID_REQUEST naming the
// first bad field. Outside a transaction the INSERT runs again while the server rolls it back
// (store.Retry), all attempts within the statement timeout; inside one (Idempotency-Key) the
// transaction's owner runs it all again (store.Transact). A connection lost under the INSERT
// is 503 saying that the pet may exist (store.WriteError).
func (r *Resolver) create(ctx context.Context, input models.NewPet) (*models.Pet, error) {
	if err := input.Validate(); err != nil {
		return nil, err
	}
	pet := input.Pet()
	ctx, cancel := context.WithTimeout(ctx, r.queryTimeout)
	defer cancel()
	insert := func(ctx context.Context) error {
		res, err := store.ConnPool(ctx, r.DB).ExecContext(ctx, r.insertSQL, pet.Name, pet.CategoryID, pet.Status)
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
	r.published(ctx, pet.ID)
	return &pet, nil
}

// petColumns are the columns a Pet is read from.
var petColumns = []string{"id", "name", "category_id", "status"}

// get returns the pet with id, or NOT_FOUND. A fresh replica answers when it has the pet, or
// when id is settled on it (it lacks no pet up to its settled id: store.Replicas); otherwise
// the primary does, so that a pet created a moment ago is found at once.
func (r *Resolver) get(ctx context.Context, id int64) (*models.Pet, error) {
	if rd, ok := r.replica(ctx); ok {
		rctx, cancel := rd.Context(ctx)
		pet, err := r.take(rctx, rd.DB, id)
		cancel()
		served := err == nil || (errors.Is(err, gorm.ErrRecordNotFound) && id <= rd.Settled)
		r.Replicas.Release(rd, served, err)
		if served {
			return found(pet, err, id)
		}
	}
	pet, err := r.take(ctx, store.Conn(ctx, r.DB), id)
	return found(pet, err, id)
}

// take reads the pet with id on db.
func (r *Resolver) take(ctx context.Context, db *gorm.DB, id int64) (*models.Pet, error) {
	ctx, cancel := context.WithTimeout(ctx, r.queryTimeout)
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
