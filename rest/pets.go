package rest

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/graph"
	"petstore/internal/etag"
	"petstore/models"
)

// Deprecation of getPet: the documented date it was deprecated (2026-01-01, RFC 9745
// structured date) and the date it will be removed (RFC 8594).
const (
	deprecationDate = "@1767225600"
	sunsetDate      = "Thu, 05 Dec 2030 00:00:00 GMT"
	successorLink   = `</v1/pets>; rel="successor-version"`
)

// PetPager lists a page of pets and the cursor of the next, "" when none follows;
// graph.Resolver.PetsPage is the one implementation.
type PetPager interface {
	PetsPage(ctx context.Context, limit *int, after *string, status *models.PetStatus) ([]models.Pet, string, error)
}

// listPets answers GET /v1/pets (listPets): a plain JSON array, with a Link header to the
// next page while more pets follow, and its validators (writeValidated): such a full page is
// immutable when immutable is true, while the last page must be revalidated.
func listPets(p PetPager, immutable bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		lq, err := listParams(c.Request.URL.RawQuery)
		if err != nil {
			writeError(c, err)
			return
		}
		pets, next, err := p.PetsPage(c.Request.Context(), lq.limit, lq.after, lq.status)
		if err != nil {
			writeError(c, err)
			return
		}
		var link []string
		cc := etag.Revalidate
		if next != "" {
			link = lq.nextLink(next)
			if immutable {
				cc = etag.Immutable
			}
		}
		if pets == nil {
			pets = []models.Pet{} // a page without pets is [], never null
		}
		writeValidated(c, marshalJSON(pets), link, cc)
	}
}

// createPet answers POST /v1/pets (createPet).
func createPet(m graph.MutationResolver) gin.HandlerFunc {
	return func(c *gin.Context) {
		in, err := decodeNewPet(c.Request)
		if err != nil {
			writeError(c, err)
			return
		}
		pet, err := m.CreatePet(c.Request.Context(), in)
		if err != nil {
			writeError(c, err)
			return
		}
		c.Header("Location", "/v1/pets/"+strconv.FormatInt(pet.ID, 10))
		writeJSON(c, http.StatusCreated, marshalJSON(pet))
	}
}

// getPet answers GET /v1/pets/{petId} (getPet, deprecated), with its validators
// (writeValidated): immutable when immutable is true.
func getPet(q graph.QueryResolver, immutable bool) gin.HandlerFunc {
	cc := etag.Revalidate
	if immutable {
		cc = etag.Immutable
	}
	return func(c *gin.Context) {
		id, err := models.ParseID("petId", c.Param("petId"))
		if err != nil {
			writeError(c, err)
			return
		}
		pet, err := q.Pet(c.Request.Context(), id)
		if err != nil {
			writeError(c, err)
			return
		}
		writeValidated(c, marshalJSON(pet), nil, cc)
	}
}

// deprecated marks every answer of a deprecated operation, errors included.
func deprecated(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Deprecation", deprecationDate)
	h.Set("Sunset", sunsetDate)
	h.Set("Link", successorLink)
}

// listOrders answers GET /v1/store/orders, whose contract is not shown: 501.
func listOrders(c *gin.Context) {
	writeError(c, apierr.New(apierr.NotImplemented, "GET /v1/store/orders is not implemented: its contract is not published"))
}
