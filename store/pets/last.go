package pets

import (
	"context"

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

// lastID reads the highest pet id on the primary.
func (s *Store) lastID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var id int64
	if err := s.db.Statement.ConnPool.QueryRowContext(ctx, lastIDSQL).Scan(&id); err != nil {
		return 0, store.APIError(err)
	}
	return id, nil
}
