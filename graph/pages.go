package graph

import (
	"context"
	"database/sql"

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
	return pets, encodeCursor(pets[len(pets)-1].ID), nil
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
		conn.Edges[i] = &PetEdge{Node: &pets[i], Cursor: encodeCursor(pets[i].ID)}
	}
	if len(pets) > 0 {
		conn.PageInfo.EndCursor = &conn.Edges[len(pets)-1].Cursor
	}
	return conn, nil
}

// The statements of the listing: keyset pagination on (status, id), so that every page
// costs the same (the first page starts after id 0). They are plain SQL on GORM's connection
// pool (its prepared-statement cache, or the request's transaction): on the hottest path of
// the service, GORM's statement building and reflective scan cost more than the query.
const (
	listAllSQL      = "SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ?"
	listByStatusSQL = "SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?"
)

// list reads one page with one query, one row more than asked to learn whether more follow.
func (r *Resolver) list(ctx context.Context, sizeName string, size *int, after *string, status *models.PetStatus) ([]models.Pet, bool, error) {
	n, err := pageSize(sizeName, size)
	if err != nil {
		return nil, false, err
	}
	afterID, err := decodeCursor(after)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.QueryTimeout)
	defer cancel()
	pool := store.ConnPool(ctx, r.DB)
	var rows *sql.Rows
	if status != nil {
		rows, err = pool.QueryContext(ctx, listByStatusSQL, string(*status), afterID, n+1)
	} else {
		rows, err = pool.QueryContext(ctx, listAllSQL, afterID, n+1)
	}
	if err != nil {
		return nil, false, storeError(err)
	}
	defer rows.Close()
	pets := make([]models.Pet, 0, n+1)
	var (
		p  models.Pet
		st sql.Null[sql.RawBytes] // no string per row: the three statuses are shared
	)
	for rows.Next() {
		if err := rows.Scan(&p.ID, &p.Name, &p.CategoryID, &st); err != nil {
			return nil, false, storeError(err)
		}
		p.Status = nil
		if st.Valid {
			p.Status = models.StatusPtr(st.V)
		}
		pets = append(pets, p)
	}
	if err := rows.Err(); err != nil {
		return nil, false, storeError(err)
	}
	if len(pets) > n {
		return pets[:n], true, nil
	}
	return pets, false, nil
}

// pointers returns pointers to the elements of pets, as gqlgen's list fields want them.
func pointers(pets []models.Pet) []*models.Pet {
	out := make([]*models.Pet, len(pets))
	for i := range pets {
		out[i] = &pets[i]
	}
	return out
}
