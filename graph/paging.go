package graph

import (
	"context"

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
	return pets, models.EncodeCursor(pets[len(pets)-1].ID), nil
}

// connection returns a page of pets as a Relay connection; sizeName is the page-size
// argument's name, for the error. hasPreviousPage is always false, as the Relay spec allows
// when paging forward: finding out would cost a second statement.
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
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[len(pets)-1].Cursor
	}
	return conn, nil
}

// list checks the page size (sizeName is its argument's name, for the error) and the cursor,
// and reads the page (pets.Store.Page), and whether more pets follow. The caller hands out
// the cursor of the page's last pet when more follow (GraphQL's endCursor also on the last
// page).
func (r *Resolver) list(ctx context.Context, sizeName string, size *int, after *string, status *models.PetStatus) ([]models.Pet, bool, error) {
	n, err := models.PageSize(sizeName, size)
	if err != nil {
		return nil, false, err
	}
	afterID, err := models.DecodeCursor(after)
	if err != nil {
		return nil, false, err
	}
	return r.pets.Page(ctx, afterID, n, status)
}

// pointers returns pointers to the elements of pets, as gqlgen's list fields want them.
func pointers(pets []models.Pet) []*models.Pet {
	out := make([]*models.Pet, len(pets))
	for i := range pets {
		out[i] = &pets[i]
	}
	return out
}
