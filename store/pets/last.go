package pets

import (
	"cmp"
	"context"
	"database/sql"

	"petstore/store"
)

// lastIDSQL reads the highest pet id, 0 for none.
const lastIDSQL = "SELECT COALESCE(MAX(id), 0) FROM pets"

// LastID returns the highest pet id stored, 0 for none, once every id up to it is settled:
// where the live Hub starts (live.HubOptions.LastID).
func (s *Store) LastID(ctx context.Context) (int64, error) {
	for attempt := 0; ; attempt++ {
		var m store.Mark
		if s.settle != nil {
			m = s.settle.Mark()
		}
		id, err := s.lastID(ctx)
		if err != nil || s.settle == nil {
			return id, err
		}
		ok, err := s.settle.Check(ctx, m, m.Settled, id, nil, nil)
		if err != nil || ok {
			return id, err
		}
		if err := s.settle.Pause(ctx, attempt); err != nil {
			return 0, store.APIError(err)
		}
	}
}

// lastID reads the highest pet id on the primary. It queries rows rather than a row: GORM's
// prepared-statement pool answers a statement it could not prepare (the context done, say)
// with an empty sql.Row, whose Scan panics.
func (s *Store) lastID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rows, err := s.db.Statement.ConnPool.QueryContext(ctx, lastIDSQL)
	if err != nil {
		return 0, store.APIError(err)
	}
	defer rows.Close()
	var id int64
	if !rows.Next() {
		return 0, store.APIError(cmp.Or(rows.Err(), sql.ErrNoRows))
	}
	if err := rows.Scan(&id); err != nil {
		return 0, store.APIError(err)
	}
	return id, nil
}
