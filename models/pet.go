// Package models holds the GORM models that gqlgen binds the GraphQL schema to, so that REST
// and GraphQL share one Pet and one PetStatus, and every rule about pets, each worded once for
// both: a pet's name and category (pet.go), its status (status.go), identifiers (id.go), and the
// page size and cursor of the listing (page.go).
package models

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"petstore/apierr"
)

// MaxNameLength is the longest name, in Unicode characters, that a pet may have.
const MaxNameLength = 255

// MaxCategoryID is the largest category identifier (2^63-1).
const MaxCategoryID = 1<<63 - 1

// categoryIDField is the name of a pet's category, in JSON and in GraphQL.
const categoryIDField = "categoryId"

// Pet is an animal of the store. Status is nil when the pet has none.
type Pet struct {
	ID         int64      `json:"id" gorm:"primaryKey"`
	Name       string     `json:"name"`
	CategoryID int64      `json:"categoryId"`
	Status     *PetStatus `json:"status,omitempty"`
}

// NewPet is what a client sends to create a pet.
type NewPet struct {
	Name       string     `json:"name"`
	CategoryID int64      `json:"categoryId"`
	Status     *PetStatus `json:"status"`
}

// Validate returns an invalid_request error naming the first field that breaks the rules:
// name must be a non-blank string of at most MaxNameLength characters and categoryId an
// integer from 1 to MaxCategoryID. Status is valid by construction.
func (p NewPet) Validate() error {
	if strings.TrimSpace(p.Name) == "" {
		return apierr.Invalid("name is required: a non-blank string of at most %d characters", MaxNameLength)
	}
	if utf8.RuneCountInString(p.Name) > MaxNameLength {
		return apierr.Invalid("name must be at most %d characters long", MaxNameLength)
	}
	if p.CategoryID == 0 {
		return apierr.Invalid("categoryId is required: an integer from 1 to %d", int64(MaxCategoryID))
	}
	if p.CategoryID < 0 {
		return IDError(categoryIDField, strconv.FormatInt(p.CategoryID, 10))
	}
	return nil
}

// Pet returns the pet that p describes, without an id.
func (p NewPet) Pet() Pet {
	return Pet{Name: p.Name, CategoryID: p.CategoryID, Status: p.Status}
}
