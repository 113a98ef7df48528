package pets

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"petstore/models"
	"petstore/store"
)

// preparedInserts are the pet's INSERT and its outbox row's, prepared once on the pool: the
// transaction that writes both is on the hottest write path, and GORM's would prepare both
// again each time (two more round trips each).
type preparedInserts struct {
	mu             sync.Mutex
	pet, outboxRow *sql.Stmt
}

// statements returns the prepared inserts of s, preparing them on first use.
func (s *Store) statements(ctx context.Context) (*sql.DB, *sql.Stmt, *sql.Stmt, error) {
	db, err := s.db.DB()
	if err != nil {
		return nil, nil, nil, err
	}
	p := &s.prepared
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pet == nil {
		pet, err := db.PrepareContext(ctx, s.insertSQL)
		if err != nil {
			return nil, nil, nil, err
		}
		row, err := db.PrepareContext(ctx, outboxSQL)
		if err != nil {
			_ = pet.Close()
			return nil, nil, nil, err
		}
		p.pet, p.outboxRow = pet, row
	}
	return db, p.pet, p.outboxRow, nil
}

// insertWithOutbox inserts pet and its outbox row in one transaction of their own
// (store.TransactSQL), and sets pet's id.
func (s *Store) insertWithOutbox(ctx context.Context, pet *models.Pet, at time.Time) error {
	db, insertPet, insertRow, err := s.statements(ctx)
	if err != nil {
		return err
	}
	return store.TransactSQL(ctx, db, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, insertPet).ExecContext(ctx, pet.Name, pet.CategoryID, pet.Status)
		if err == nil {
			pet.ID, err = res.LastInsertId()
		}
		if err == nil {
			_, err = tx.StmtContext(ctx, insertRow).ExecContext(ctx, pet.ID, at.UTC())
		}
		return err
	})
}
