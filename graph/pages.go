package graph

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"petstore/migrations"
	"petstore/models"
	"petstore/store"
)

// PetsPage lists up to limit pets (default 20, 1 to 100) of the given status in id order,
// after the pet that the cursor after names, and returns the cursor of the next page, or ""
// when no pet follows. It is the listing behind GET /v1/pets, and returns INVALID_REQUEST for
// a limit out of range or a cursor this service did not issue.
func (r *Resolver) PetsPage(ctx context.Context, limit *int, after *string, status *models.PetStatus) ([]models.Pet, string, error) {
	pets, more, err := r.list(ctx, "limit", limit, after, status)
	if err != nil || !more {
		return pets, "", err
	}
	return pets, models.EncodeCursor(pets[len(pets)-1].ID), nil
}

// connection returns a page of pets as a Relay connection; sizeName is the page-size
// argument's name, for the error.
func (r *Resolver) connection(ctx context.Context, sizeName string, size *int, after *string, status *models.PetStatus) (*PetConnection, error) {
	pets, more, err := r.list(ctx, sizeName, size, after, status)
	if err != nil {
		return nil, err
	}
	conn := &PetConnection{Edges: make([]*PetEdge, len(pets)), PageInfo: &PageInfo{HasNextPage: more}}
	for i := range pets {
		conn.Edges[i] = &PetEdge{Node: &pets[i], Cursor: models.EncodeCursor(pets[i].ID)}
	}
	if len(pets) > 0 {
		conn.PageInfo.EndCursor = &conn.Edges[len(pets)-1].Cursor
	}
	return conn, nil
}

// listStatements are the statements of the listing: keyset pagination on (status, id), so
// that every page costs the same. They are plain SQL on
// GORM's connection pool (its prepared-statement cache, or the request's transaction): on the
// hottest path of the service, GORM's statement building and reflective scan cost more than
// the query.
//
// The first page has statements of its own, without the condition on id: ids start at 1, so
// "id > 0" selects every pet, and MariaDB 10.11 spent about 20 µs of CPU more on a first page
// of 20 with it than without it (74 against 54 µs a statement, medians of four rounds of
// 20,000 prepared executions from 16 connections; a plain ORDER BY id LIMIT 20: 52 µs).
type listStatements struct{ all, byStatus, first, firstByStatus string }

// newListStatements returns the listing statements of dialect, whose statements take at most
// timeout. On SQLite, whose one connection runs one statement at a time, every write has
// committed before a page is read.
//
// On MySQL a page is a plain read, which neither waits for a write nor holds it up, settled by
// store.Settler before it is answered (settledPage): AUTO_INCREMENT hands out ids before their
// rows commit, or are even in the table, so a page can lack a lower id still on its way (a
// hole among the ids it read, or beyond the settled ones), and a cursor past it would skip
// that pet for good once it commits. A page whose ids follow the settled ones without a hole
// settles itself; one with a hole is read again after a short pause until the hole fills, or
// until it is dead: missing, after a locking read that waits for a row still uncommitted, a
// second after a higher id was seen committed (TestPagingUnderConcurrentWriters,
// TestPageWaitsForMissingID). A statement that does not end within timeout is ended on the
// server too (MariaDB's SET STATEMENT max_statement_time, MySQL's MAX_EXECUTION_TIME hint;
// each ignores the other's comment), rather than keep a server thread after the client went:
// 503.
//
// Rejected: a locking read for every page (LOCK IN SHARE MODE) waits for uncommitted rows, but
// its next-key locks at the end of the table hold up the inserts there, whose ids are taken and
// whose rows are not in the table yet: under a stream of pages an insert can wait long enough
// for its hole to pass for dead (TestPagingOnReplica found such skips). Committing in id order
// (a counter row locked until commit) would serialise every POST; entering rows in id order
// (INSERT ... SELECT under the AUTO-INC table lock) cost a quarter of the POSTs a second
// (pets.go).
func newListStatements(dialect string, timeout time.Duration) listStatements {
	if dialect != migrations.MySQL {
		return withSuffix("SELECT "+listColumns, "")
	}
	return mysqlListStatements(timeout, "", "")
}

// galeraListStatements are the listing statements on a Galera cluster: the locking read of
// MySQL, which waits for the node's own writes in flight, run once the node has applied
// everything the cluster committed before it (wsrep_sync_wait=1; MariaDB's SET STATEMENT,
// which the connection's own wsrep_sync_wait, if set, makes redundant), so that a pet
// committed through another node a moment before is listed. Writes still in flight on other
// nodes are store.Settler's.
func galeraListStatements(timeout time.Duration) listStatements {
	return mysqlListStatements(timeout, ", wsrep_sync_wait=1", " LOCK IN SHARE MODE")
}

// replicaListStatements are the listing statements on a replica: plain reads, whose pages are
// used only where they are certainly the primary's (listOnReplica).
func replicaListStatements(timeout time.Duration) listStatements {
	return mysqlListStatements(timeout, "", "")
}

const listColumns = "id, name, category_id, status FROM pets "

// mysqlListStatements returns the MySQL listing statements, with the MariaDB session
// settings of vars (", NAME=VALUE...") and each ending in suffix.
func mysqlListStatements(timeout time.Duration, vars, suffix string) listStatements {
	head := fmt.Sprintf("/*M! SET STATEMENT max_statement_time=%.3f%s FOR*/ SELECT /*+ MAX_EXECUTION_TIME(%d) */ ",
		timeout.Seconds(), vars, timeout.Milliseconds())
	return withSuffix(head+listColumns, suffix)
}

// withSuffix returns the listing statements that start with head and end with suffix.
func withSuffix(head, suffix string) listStatements {
	return listStatements{
		all:           head + "WHERE id > ? ORDER BY id LIMIT ?" + suffix,
		byStatus:      head + "WHERE status = ? AND id > ? ORDER BY id LIMIT ?" + suffix,
		first:         head + "ORDER BY id LIMIT ?" + suffix,
		firstByStatus: head + "WHERE status = ? ORDER BY id LIMIT ?" + suffix,
	}
}

// list reads one page with one query, one row more than asked to learn whether more follow:
// on a replica when it certainly has the page (listOnReplica), else on the primary. The
// caller hands out the cursor of the page's last pet when more follow (GraphQL's endCursor
// also on the last page).
func (r *Resolver) list(ctx context.Context, sizeName string, size *int, after *string, status *models.PetStatus) ([]models.Pet, bool, error) {
	n, err := models.PageSize(sizeName, size)
	if err != nil {
		return nil, false, err
	}
	afterID, err := models.DecodeCursor(after)
	if err != nil {
		return nil, false, err
	}
	pool, inTx := store.TxConnPool(ctx, r.DB)
	if !inTx { // a transaction's reads run in it
		if pets, more, ok := r.listOnReplica(ctx, n, afterID, status); ok {
			return pets, more, nil
		}
	}
	return r.settledPageOn(ctx, pool, inTx, n, afterID, status)
}

// settledPage reads a page on the primary and answers it only once every id up to its last
// pet is settled (store.Settler): the page's cursor, or what a subscription marks as sent,
// then passes no pet that can still appear. On MySQL a page whose ids follow the settled ones
// without a hole is settled by its own read; one with a hole (an insert that has taken its id
// and is not in the table yet, or one that failed) is read again after a pause, until the
// hole fills or the time rule settles it; on a Galera cluster a page among the pets added in
// the last SettleDelay waits that long.
func (r *Resolver) settledPage(ctx context.Context, n int, afterID int64, status *models.PetStatus) ([]models.Pet, bool, error) {
	pool, inTx := store.TxConnPool(ctx, r.DB)
	return r.settledPageOn(ctx, pool, inTx, n, afterID, status)
}

// settledPageOn is settledPage on pool, the connection pool of ctx's transaction when inTx,
// else the primary's (store.TxConnPool).
func (r *Resolver) settledPageOn(ctx context.Context, pool gorm.ConnPool, inTx bool, n int, afterID int64, status *models.PetStatus) ([]models.Pet, bool, error) {
	s := r.settle
	for attempt := 0; ; attempt++ {
		var m store.Mark
		if s != nil {
			m = s.Mark() // before the read: it sees every pet up to m.Settled
		}
		pets, more, err := r.page(ctx, pool, inTx, r.listSQL, n, afterID, status)
		// The last page settles too: it hands out no cursor, but the walk that reads it has
		// passed its ids, and a subscription marks them sent.
		if err != nil || len(pets) == 0 || s == nil {
			return pets, more, err
		}
		base, upTo := max(m.Settled, afterID), pets[len(pets)-1].ID
		if upTo <= base {
			return pets, more, nil
		}
		var ids []int64
		var listed func(int64, sql.NullString) bool
		if status == nil {
			ids = petIDs(pets)
		} else {
			listed = func(id int64, st sql.NullString) bool {
				return !st.Valid || st.String != string(*status) || slices.ContainsFunc(pets, func(p models.Pet) bool { return p.ID == id })
			}
		}
		ok, err := s.Check(ctx, m, base, upTo, ids, listed)
		if err != nil {
			return nil, false, err
		}
		if ok {
			return pets, more, nil
		}
		if err := s.Pause(ctx, attempt); err != nil {
			return nil, false, store.APIError(err)
		}
	}
}

// petIDs returns the ids of pets.
func petIDs(pets []models.Pet) []int64 {
	ids := make([]int64, len(pets))
	for i := range pets {
		ids[i] = pets[i].ID
	}
	return ids
}

// listOnReplica reads the page of a read outside a transaction on a fresh replica and reports
// whether it is certainly the page the primary would serve: another page follows, and every
// pet id up to the page's last is settled on the replica, which then lacks none of them
// (store.Replicas). A page that does not qualify is read again on the primary: the last page
// of a listing (the replica may lack pets added a moment ago, which their writer expects to
// find), and pages at the end of the table still settling. A replica's plain read waits for no lock and holds none, and the
// cursors it hands out never pass an unsettled id, so paging keeps its promise on replicas:
// no pet skipped or repeated.
func (r *Resolver) listOnReplica(ctx context.Context, n int, afterID int64, status *models.PetStatus) ([]models.Pet, bool, bool) {
	rd, ok := r.Replicas.Pick()
	if !ok {
		return nil, false, false
	}
	if afterID >= rd.Settled { // every pet of the page would be above the settled id
		r.Replicas.Release(rd, false, nil)
		return nil, false, false
	}
	rctx, cancel := rd.Context(ctx)
	defer cancel()
	pets, more, err := r.page(rctx, rd.DB.Statement.ConnPool, false, r.replicaSQL, n, afterID, status)
	ok = err == nil && more && pets[len(pets)-1].ID <= rd.Settled
	r.Replicas.Release(rd, ok, err)
	return pets, more, ok
}

// page reads up to n pets after afterID with stmts on pool, and whether more follow; inTx
// tells that pool is the connection of ctx's transaction (store.InTx).
func (r *Resolver) page(ctx context.Context, pool gorm.ConnPool, inTx bool, stmts listStatements, n int, afterID int64, status *models.PetStatus) ([]models.Pet, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.queryTimeout)
	defer cancel()
	var (
		pets []models.Pet
		more bool
	)
	read := func(ctx context.Context) error {
		var (
			rows *sql.Rows
			err  error
		)
		switch {
		case status != nil && afterID == 0:
			rows, err = pool.QueryContext(ctx, stmts.firstByStatus, string(*status), n+1)
		case status != nil:
			rows, err = pool.QueryContext(ctx, stmts.byStatus, string(*status), afterID, n+1)
		case afterID == 0:
			rows, err = pool.QueryContext(ctx, stmts.first, n+1)
		default:
			rows, err = pool.QueryContext(ctx, stmts.all, afterID, n+1)
		}
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

// scanPage reads the rows of a page of n pets, and whether more follow; its errors are the
// driver's. It is the innermost loop of every listing, written to spare database/sql's
// generic conversions: the integer columns are read as they come, not by reflection, and
// the names are read as raw bytes into one buffer that becomes one string for the page, which
// the pets' names share, not a string each; no string per status either, the three being
// shared.
func scanPage(rows *sql.Rows, n int) ([]models.Pet, bool, error) {
	pets := make([]models.Pet, 0, n+1)
	var (
		row struct {
			id, category any // int64 but for another driver (convertInt)
			name, status sql.RawBytes
		}
		nameBuf [1024]byte // the names of a page of 20, or of 100 short ones
		endBuf  [101]int32 // a page of 100 and the one after it
		names   = nameBuf[:0]
		ends    = endBuf[:0] // of each pet's name in names
	)
	for rows.Next() {
		if err := rows.Scan(&row.id, &row.name, &row.category, &row.status); err != nil {
			return nil, false, err
		}
		var (
			p   models.Pet
			ok  bool
			err error
		)
		if p.ID, ok = row.id.(int64); !ok {
			if p.ID, err = convertInt(rows, 0, row.id); err != nil {
				return nil, false, err
			}
		}
		if p.CategoryID, ok = row.category.(int64); !ok {
			if p.CategoryID, err = convertInt(rows, 2, row.category); err != nil {
				return nil, false, err
			}
		}
		if row.status != nil { // a NULL status; the column's strings are never nil
			p.Status = models.StatusPtr(row.status)
		}
		pets = append(pets, p)
		names = append(names, row.name...)
		ends = append(ends, int32(len(names)))
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	all, start := string(names), int32(0)
	for i, end := range ends {
		pets[i].Name, start = all[start:end], end
	}
	if len(pets) > n {
		return pets[:n], true, nil
	}
	return pets, false, nil
}

// convertInt returns the integer of column col, scanned into v (an any, which database/sql
// fills without converting: the int64 that the MySQL and SQLite drivers return is taken as it
// is by scanPage, where a Scanner or an *int64 would cost a type assertion or reflection) when
// v is not an int64: converted as sql.NullInt64 converts it, its error worded as Rows.Scan's.
func convertInt(rows *sql.Rows, col int, v any) (int64, error) {
	var n sql.NullInt64
	err := n.Scan(v)
	if err == nil && !n.Valid {
		err = errors.New("graph: NULL in an integer column")
	}
	if err != nil {
		name := ""
		if cols, cerr := rows.Columns(); cerr == nil && col < len(cols) {
			name = cols[col]
		}
		return 0, fmt.Errorf("sql: Scan error on column index %d, name %q: %w", col, name, err)
	}
	return n.Int64, nil
}

// pointers returns pointers to the elements of pets, as gqlgen's list fields want them.
func pointers(pets []models.Pet) []*models.Pet {
	out := make([]*models.Pet, len(pets))
	for i := range pets {
		out[i] = &pets[i]
	}
	return out
}
