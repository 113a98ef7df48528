package graph

import (
	"io"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/models"
)

// A list of pets is what front ends query most, { pets(limit: 20) { id name categoryId
// status } }, and gqlgen's generic execution spends most of such a query's CPU on the fields
// of its elements: per field a field context, a context value, closures and a boxed value,
// about 60 allocations per pet. Yet a Pet's fields are plain struct fields that cannot fail.
// So a list of pets whose selection is flat (scalar fields of Pet only, however they are
// spelled: aliases, fragments, @skip and @include) is written straight from the structs, by
// the same marshalling functions gqlgen uses. The output is byte for byte what gqlgen
// writes (TestFlatPetsMatchGeneric and FuzzFlatPets compare the two).
//
// The flat path runs no field interceptors: NewHandler registers none
// (TestNoFieldInterceptors) but Options.Tracer, which spans resolvers only. Anything else, such as a selection with a deferred fragment, or a
// nil element, takes gqlgen's path.

// petField is a field of Pet that the flat path writes.
type petField uint8

const (
	petTypename petField = iota
	petID
	petName
	petCategoryID
	petStatus
)

// petFields maps the field names of Pet to what the flat path writes.
var petFields = map[string]petField{
	"__typename": petTypename,
	"id":         petID,
	"name":       petName,
	"categoryId": petCategoryID,
	"status":     petStatus,
}

// flatField is one field of a flat selection: what to write, and the bytes before its value
// (`{"alias":` for the first field, `,"alias":` for the others).
type flatField struct {
	kind   petField
	prefix []byte
}

// flatPets holds the plan of a flat selection and the buffer its elements are written in.
type flatPets struct {
	fields []flatField
	buf    []byte // reused by each element: gqlgen marshals a response's values one at a time
}

// elementBufBytes is the capacity flatPets.buf starts with: enough for a pet with every field
// and a name of some 40 bytes.
const elementBufBytes = 128

// flatPet is one element of a flat list of pets.
type flatPet struct {
	list *flatPets
	pet  *models.Pet
}

// marshalFlatPets returns the elements of pets as marshallers of the flat path, or nil when
// sel is not flat or an element is nil (gqlgen's path then reports the null).
func (ec *executionContext) marshalFlatPets(sel ast.SelectionSet, pets []*models.Pet) graphql.Array {
	fields := graphql.CollectFields(ec.OperationContext, sel, petImplementors)
	if len(fields) == 0 {
		return nil
	}
	list := &flatPets{fields: make([]flatField, len(fields)), buf: make([]byte, 0, elementBufBytes)}
	prefixes := make([]byte, 0, 16*len(fields)) // every field's prefix, back to back, the ith ending at ends[i]
	var endsBuf [8]int
	ends := endsBuf[:0]
	for i, f := range fields {
		kind, ok := petFields[f.Name]
		if !ok || len(f.Selections) > 0 || f.IsDeferred() {
			return nil
		}
		if i == 0 {
			prefixes = append(prefixes, '{')
		} else {
			prefixes = append(prefixes, ',')
		}
		prefixes = append(appendGQLString(prefixes, f.Alias), ':')
		list.fields[i].kind = kind
		ends = append(ends, len(prefixes))
	}
	start := 0
	for i, end := range ends {
		list.fields[i].prefix = prefixes[start:end:end]
		start = end
	}
	elems := make([]flatPet, len(pets))
	ret := make(graphql.Array, len(pets))
	for i, p := range pets {
		if p == nil {
			return nil
		}
		elems[i] = flatPet{list: list, pet: p}
		ret[i] = &elems[i]
	}
	return ret
}

// MarshalGQL writes the pet as gqlgen's generated _Pet does for the same selection.
func (e *flatPet) MarshalGQL(w io.Writer) {
	b, p := e.list.buf[:0], e.pet
	for _, f := range e.list.fields {
		b = append(b, f.prefix...)
		switch f.kind {
		case petTypename:
			b = append(b, `"Pet"`...)
		case petID:
			b = models.AppendGQLID(b, p.ID)
		case petName:
			b = appendGQLString(b, p.Name)
		case petCategoryID:
			b = models.AppendGQLID(b, p.CategoryID)
		case petStatus:
			if p.Status == nil {
				b = append(b, "null"...)
			} else {
				b = p.Status.AppendGQL(b)
			}
		}
	}
	b = append(b, '}')
	e.list.buf = b
	_, _ = w.Write(b)
}

// appendGQLString appends s as graphql.MarshalString writes it: quoted, with ", \ and the
// control characters escaped, every other byte as it is.
func appendGQLString(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '\\' && c != '"' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\t':
			b = append(b, `\t`...)
		case '\r':
			b = append(b, `\r`...)
		case '\n':
			b = append(b, `\n`...)
		case '\\', '"':
			b = append(b, '\\', c)
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	return append(append(b, s[start:]...), '"')
}
