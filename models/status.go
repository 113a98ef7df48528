package models

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"petstore/apierr"
)

// PetStatus is the availability of a pet. Its value, in JSON and in the database, is the
// lower-case word (available); GraphQL spells it upper-case (AVAILABLE).
type PetStatus string

// The three statuses.
const (
	PetStatusAvailable PetStatus = "available"
	PetStatusPending   PetStatus = "pending"
	PetStatusSold      PetStatus = "sold"
)

// statusValues are the three statuses, for StatusPtr to point into.
var statusValues = [...]PetStatus{PetStatusAvailable, PetStatusPending, PetStatusSold}

// StatusPtr returns a pointer to the status spelled s (as read from the database), shared by
// every caller for the three valid statuses so that reading rows allocates nothing for them:
// never write through it.
func StatusPtr(s []byte) *PetStatus {
	for i := range statusValues {
		if string(statusValues[i]) == string(s) {
			return &statusValues[i]
		}
	}
	st := PetStatus(s)
	return &st
}

// IsValid reports whether s is one of the three statuses.
func (s PetStatus) IsValid() bool {
	switch s {
	case PetStatusAvailable, PetStatusPending, PetStatusSold:
		return true
	}
	return false
}

// ParsePetStatus parses the REST spelling (available, pending, sold); anything else is an
// invalid_request error.
func ParsePetStatus(s string) (PetStatus, error) {
	if st := PetStatus(s); st.IsValid() {
		return st, nil
	}
	return "", apierr.Invalid("status must be one of available, pending, sold; got %q", s)
}

// LookupPetStatus returns the status that b spells exactly, and whether it spells one; unlike
// ParsePetStatus it copies nothing, for readers of request bodies.
func LookupPetStatus(b []byte) (PetStatus, bool) {
	for _, st := range statusValues {
		if string(b) == string(st) {
			return st, true
		}
	}
	return "", false
}

// UnmarshalJSON parses the REST spelling.
func (s *PetStatus) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return apierr.Invalid("status must be one of available, pending, sold")
	}
	st, err := ParsePetStatus(str)
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// MarshalGQL writes the GraphQL spelling (AVAILABLE).
func (s PetStatus) MarshalGQL(w io.Writer) {
	_, _ = w.Write(s.AppendGQL(nil))
}

// AppendGQL appends the GraphQL spelling as MarshalGQL writes it: "AVAILABLE", quoted.
func (s PetStatus) AppendGQL(b []byte) []byte {
	switch s {
	case PetStatusAvailable:
		return append(b, `"AVAILABLE"`...)
	case PetStatusPending:
		return append(b, `"PENDING"`...)
	case PetStatusSold:
		return append(b, `"SOLD"`...)
	}
	return strconv.AppendQuote(b, strings.ToUpper(string(s)))
}

// UnmarshalGQL parses the GraphQL spelling (AVAILABLE).
func (s *PetStatus) UnmarshalGQL(v any) error {
	str, ok := v.(string)
	st := PetStatus(strings.ToLower(str))
	if !ok || str != strings.ToUpper(str) || !st.IsValid() {
		return apierr.Invalid("status must be one of AVAILABLE, PENDING, SOLD; got %v", fmt.Sprint(v))
	}
	*s = st
	return nil
}
