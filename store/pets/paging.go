package pets

import (
	"context"
	"database/sql"
	"slices"

	"gorm.io/gorm"

	"petstore/models"
	"petstore/store"
)

// Page reads up to n pets after afterID in id order, of status when it is not nil, and
// whether more follow: the listing behind GET /v1/pets and the GraphQL lists. It reads with
// one query, one row more than asked: on a replica when it certainly has the page
// (listOnReplica), else on the primary, settled (settledPageOn); inside a transaction, in it.
// The caller hands out the cursor of the page's last pet. A page that another follows comes
// from the page cache when it is there, and goes into it otherwise (PageCache): the caller
// must not change the pets of any page.
func (s *Store) Page(ctx context.Context, afterID int64, n int, status *models.PetStatus) ([]models.Pet, bool, error) {
	pool, inTx := store.TxConnPool(ctx, s.db)
	if inTx || s.pages == nil { // a transaction's reads run in it
		return s.read(ctx, pool, inTx, afterID, n, status)
	}
	key := pageKey{after: afterID, n: n}
	if status != nil {
		key.status = *status
	}
	if pets, ok := s.pages.get(key); ok {
		return pets, true, nil
	}
	mark := s.pages.mark()
	pets, more, err := s.read(ctx, pool, false, afterID, n, status)
	if err == nil && more { // full and settled
		s.pages.put(key, pets, mark)
	}
	return pets, more, err
}

// read reads the page of Page: outside a transaction on a replica when it certainly has the
// page, else on pool, settled.
func (s *Store) read(ctx context.Context, pool gorm.ConnPool, inTx bool, afterID int64, n int, status *models.PetStatus) ([]models.Pet, bool, error) {
	if !inTx {
		if pets, more, ok := s.listOnReplica(ctx, n, afterID, status); ok {
			return pets, more, nil
		}
	}
	return s.settledPageOn(ctx, pool, inTx, n, afterID, status)
}

// After is Page on the primary (or the transaction of ctx), never on a replica: a settled
// page, so no pet it skips can commit later. It is what the live Hub reads
// (live.HubOptions.Read).
func (s *Store) After(ctx context.Context, afterID int64, n int, status *models.PetStatus) ([]models.Pet, bool, error) {
	pool, inTx := store.TxConnPool(ctx, s.db)
	return s.settledPageOn(ctx, pool, inTx, n, afterID, status)
}

// settledPageOn reads a page on pool, the connection pool of ctx's transaction when inTx,
// else the primary's, and answers it only once every id up to its last pet is settled
// (store.Settler): the page's cursor, or what a subscription marks as sent, then passes no pet
// that can still appear. A page that does not settle is read again after a pause (Settler.Pause).
func (s *Store) settledPageOn(ctx context.Context, pool gorm.ConnPool, inTx bool, n int, afterID int64, status *models.PetStatus) ([]models.Pet, bool, error) {
	st := s.settle
	for attempt := 0; ; attempt++ {
		var m store.Mark
		if st != nil {
			m = st.Mark() // before the read: it sees every pet up to m.Settled
		}
		pets, more, err := s.page(ctx, pool, inTx, s.listSQL, n, afterID, status)
		// The last page settles too: it hands out no cursor, but the walk that reads it has
		// passed its ids, and a subscription marks them sent.
		if err != nil || len(pets) == 0 || st == nil {
			return pets, more, err
		}
		base, upTo := max(m.Settled, afterID), pets[len(pets)-1].ID
		if upTo <= base {
			return pets, more, nil
		}
		ids, listed := pageIDs(pets, status)
		ok, err := st.Check(ctx, m, base, upTo, ids, listed)
		if err != nil {
			return nil, false, err
		}
		if ok {
			return pets, more, nil
		}
		if err := st.Pause(ctx, attempt); err != nil {
			return nil, false, store.APIError(err)
		}
	}
}

// pageIDs returns what settling a page needs of it (store.Settler.Check): the ids of an
// unfiltered page, which are all the ids up to its last; for a page of one status, whether
// an id read in its range with a status must have been listed.
func pageIDs(pets []models.Pet, status *models.PetStatus) ([]int64, func(int64, sql.NullString) bool) {
	if status == nil {
		ids := make([]int64, len(pets))
		for i := range pets {
			ids[i] = pets[i].ID
		}
		return ids, nil
	}
	return nil, func(id int64, st sql.NullString) bool {
		return !st.Valid || st.String != string(*status) || slices.ContainsFunc(pets, func(p models.Pet) bool { return p.ID == id })
	}
}

// listOnReplica reads the page of a read outside a transaction on a fresh replica and reports
// whether it is certainly the page the primary would serve: another page follows, and every
// pet id up to the page's last is settled on the replica, which then lacks none of them
// (store.Replicas). A page that does not qualify is read again on the primary: the last page
// of a listing (the replica may lack pets added a moment ago, which their writer expects to
// find), and pages at the end of the table still settling. The cursors it hands out never
// pass an unsettled id, so paging on replicas skips or repeats no pet.
func (s *Store) listOnReplica(ctx context.Context, n int, afterID int64, status *models.PetStatus) ([]models.Pet, bool, bool) {
	rd, ok := s.replicas.Pick()
	if !ok {
		return nil, false, false
	}
	if afterID >= rd.Settled { // every pet of the page would be above the settled id
		s.replicas.Release(rd, false, nil)
		return nil, false, false
	}
	rctx, cancel := rd.Context(ctx)
	defer cancel()
	pets, more, err := s.page(rctx, rd.DB.Statement.ConnPool, false, s.replicaSQL, n, afterID, status)
	ok = err == nil && more && pets[len(pets)-1].ID <= rd.Settled
	s.replicas.Release(rd, ok, err)
	return pets, more, ok
}

// page reads up to n pets after afterID with stmts on pool, and whether more follow; inTx
// tells that pool is the connection of ctx's transaction (store.InTx).
func (s *Store) page(ctx context.Context, pool gorm.ConnPool, inTx bool, stmts listStatements, n int, afterID int64, status *models.PetStatus) ([]models.Pet, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var (
		pets []models.Pet
		more bool
	)
	read := func(ctx context.Context) error {
		rows, err := query(ctx, pool, stmts, n, afterID, status)
		if err != nil {
			return err
		}
		defer rows.Close()
		pets, more, err = scanPage(rows, n)
		return err
	}
	// A locking read can be chosen as a deadlock's victim, on Galera also aborted by a write
	// replicated from another node (1213): outside a transaction, which that would have rolled
	// back, it simply runs again.
	var err error
	if inTx {
		err = read(ctx)
	} else {
		err = store.Retry(ctx, read)
	}
	if err != nil {
		return nil, false, store.APIError(err)
	}
	return pets, more, nil
}

// query runs the statement of stmts that reads n+1 pets after afterID of status.
func query(ctx context.Context, pool gorm.ConnPool, stmts listStatements, n int, afterID int64, status *models.PetStatus) (*sql.Rows, error) {
	switch {
	case status != nil && afterID == 0:
		return pool.QueryContext(ctx, stmts.firstByStatus, string(*status), n+1)
	case status != nil:
		return pool.QueryContext(ctx, stmts.byStatus, string(*status), afterID, n+1)
	case afterID == 0:
		return pool.QueryContext(ctx, stmts.first, n+1)
	default:
		return pool.QueryContext(ctx, stmts.all, afterID, n+1)
	}
}
