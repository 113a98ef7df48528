package graph

import (
	"context"
	"database/sql"

	"petstore/models"
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

// list reads one page with one query: keyset pagination on (status, id), so that every page
// costs the same, and one row more than asked to learn whether more follow. Rows are scanned
// by hand into one slice: GORM builds the statement, but its reflective scan would allocate
// per row and per column.
func (r *Resolver) list(ctx context.Context, sizeName string, size *int, after *string, status *models.PetStatus) ([]models.Pet, bool, error) {
	n, err := pageSize(sizeName, size)
	if err != nil {
		return nil, false, err
	}
	afterID, err := decodeCursor(after)
	if err != nil {
		return nil, false, err
	}
	db, cancel := r.conn(ctx)
	defer cancel()
	q := db.Model(&models.Pet{}).Select(petColumns).Order("id").Limit(n + 1)
	if status != nil {
		q = q.Where("status = ?", *status)
	}
	if afterID > 0 {
		q = q.Where("id > ?", afterID)
	}
	rows, err := q.Rows()
	if err != nil {
		return nil, false, storeError(err)
	}
	defer rows.Close()
	pets := make([]models.Pet, 0, n+1)
	for rows.Next() {
		var p models.Pet
		var st sql.NullString
		if err := rows.Scan(&p.ID, &p.Name, &p.CategoryID, &st); err != nil {
			return nil, false, storeError(err)
		}
		if st.Valid {
			p.Status = models.StatusPtr(st.String)
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
