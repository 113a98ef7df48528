package graph

import (
	"context"

	"petstore/models"
)

// PetsPage lists up to limit pets (default 20, 1 to 100) of the given status in id order,
// after the pet that the cursor after names, as a connection whose page info says whether more
// follow. It is the listing behind GET /v1/pets, pets and petsConnection, and returns
// INVALID_REQUEST for a limit out of range or a cursor this service did not issue.
func (r *Resolver) PetsPage(ctx context.Context, limit *int, after *string, status *models.PetStatus) (*PetConnection, error) {
	return r.page(ctx, "limit", limit, after, status)
}

// page reads one page with one query: keyset pagination on (status, id), so that every page
// costs the same, and one row more than asked to learn whether more follow. sizeName is the
// page-size argument's name, for the error.
func (r *Resolver) page(ctx context.Context, sizeName string, size *int, after *string, status *models.PetStatus) (*PetConnection, error) {
	n, err := pageSize(sizeName, size)
	if err != nil {
		return nil, err
	}
	afterID, err := decodeCursor(after)
	if err != nil {
		return nil, err
	}
	db, cancel := r.conn(ctx)
	defer cancel()
	q := db.Select(petColumns).Order("id").Limit(n + 1)
	if status != nil {
		q = q.Where("status = ?", *status)
	}
	if afterID > 0 {
		q = q.Where("id > ?", afterID)
	}
	pets := make([]*models.Pet, 0, n+1)
	if err := q.Find(&pets).Error; err != nil {
		return nil, storeError(err)
	}
	conn := &PetConnection{PageInfo: &PageInfo{HasNextPage: len(pets) > n}}
	if conn.PageInfo.HasNextPage {
		pets = pets[:n]
	}
	conn.Edges = make([]*PetEdge, len(pets))
	for i, p := range pets {
		conn.Edges[i] = &PetEdge{Node: p, Cursor: encodeCursor(p.ID)}
	}
	if len(pets) > 0 {
		conn.PageInfo.EndCursor = &conn.Edges[len(pets)-1].Cursor
	}
	return conn, nil
}

// Nodes returns the pets of the page.
func (c *PetConnection) Nodes() []*models.Pet {
	pets := make([]*models.Pet, len(c.Edges))
	for i, e := range c.Edges {
		pets[i] = e.Node
	}
	return pets
}
