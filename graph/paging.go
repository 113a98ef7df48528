package graph

import (
	"context"
	"strings"

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
// when paging forward: finding out would cost a second statement. Its edges and their cursors
// take a few allocations, whatever their number, where one each would cost 2 µs a page of 100.
func (r *Resolver) connection(ctx context.Context, sizeName string, size *int, after *string, status *models.PetStatus) (*PetConnection, error) {
	pets, more, err := r.list(ctx, sizeName, size, after, status)
	if err != nil {
		return nil, err
	}
	conn := &PetConnection{Edges: make([]*PetEdge, len(pets)), PageInfo: &PageInfo{HasNextPage: more}}
	edges := make([]PetEdge, len(pets))
	cursors := cursorsOf(pets)
	for i := range pets {
		edges[i] = PetEdge{Node: &pets[i], Cursor: cursors[i]}
		conn.Edges[i] = &edges[i]
	}
	if len(pets) > 0 {
		conn.PageInfo.StartCursor = &edges[0].Cursor
		conn.PageInfo.EndCursor = &edges[len(pets)-1].Cursor
	}
	return conn, nil
}

// cursorsOf returns the cursor of each pet (models.EncodeCursor), all in one string.
func cursorsOf(pets []models.Pet) []string {
	var all strings.Builder
	all.Grow(models.MaxCursorBytes * len(pets))
	ends := make([]int, len(pets))
	var enc [models.MaxCursorBytes]byte
	for i := range pets {
		all.Write(models.AppendCursor(enc[:0], pets[i].ID))
		ends[i] = all.Len()
	}
	text, start := all.String(), 0
	out := make([]string, len(pets))
	for i, end := range ends {
		out[i], start = text[start:end], end
	}
	return out
}

// list checks the page size (sizeName is its argument's name, for the error) and the cursor,
// and reads the page (pets.Store.Page), and whether more pets follow. The caller hands out
// the cursor of the page's last pet when more follow (GraphQL's endCursor also on the last
// page). A page read that failed on the direct path, which ctx hands over, fails again
// without a second read.
func (r *Resolver) list(ctx context.Context, sizeName string, size *int, after *string, status *models.PetStatus) ([]models.Pet, bool, error) {
	if err := readFailed(ctx); err != nil { // the direct path's read, handed over (direct.go)
		return nil, false, err
	}
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
