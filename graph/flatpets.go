package graph

import (
	"bytes"
	"io"
	"slices"
	"sync"

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
// writes (TestFlatListsMatchGeneric and FuzzFlatLists run both paths; FuzzPlainFlatPlan
// compares the plans).
//
// The flat path runs no field interceptors: NewHandler registers none
// (TestNoFieldInterceptors) but Options.Tracer, which spans resolvers only. Anything else,
// such as a selection with a deferred fragment, or a nil element, takes gqlgen's path.

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

// flatPlan is what the flat path writes of each pet of a selection: its fields, in order.
// It is read only once made, and shared by the requests of a cached document.
type flatPlan struct {
	fields []flatField
	size   int // a guess of the bytes of one pet: its prefixes, braces and typical values
}

// flatPet is one element of a flat list of pets.
type flatPet struct {
	plan *flatPlan
	pet  *models.Pet
	rest int // for the first element, how many follow it; 0 for the others
}

// marshalFlatPets returns the elements of pets as marshallers of the flat path, or nil when
// sel is not flat or an element is nil (gqlgen's path then reports the null).
func (ec *executionContext) marshalFlatPets(sel ast.SelectionSet, pets []*models.Pet) graphql.Array {
	plan := plainFlatPlan(sel)
	if plan == nil {
		plan = newFlatPlan(graphql.CollectFields(ec.OperationContext, sel, petImplementors))
		if plan == nil {
			return nil
		}
	}
	elems := make([]flatPet, len(pets))
	ret := make(graphql.Array, len(pets))
	for i, p := range pets {
		if p == nil {
			return nil
		}
		elems[i] = flatPet{plan: plan, pet: p}
		ret[i] = &elems[i]
	}
	if len(elems) > 0 {
		elems[0].rest = len(elems) - 1
	}
	return ret
}

// newFlatPlan returns the plan of the collected fields of a selection of Pet, or nil when
// they are not flat: none, or one that is not a field of petFields, has a selection or is
// deferred.
func newFlatPlan(fields []graphql.CollectedField) *flatPlan {
	if len(fields) == 0 {
		return nil
	}
	plan := &flatPlan{fields: make([]flatField, len(fields)), size: 1}
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
		plan.fields[i].kind = kind
		plan.size += valueBytes[kind]
		ends = append(ends, len(prefixes))
	}
	start := 0
	for i, end := range ends {
		plan.fields[i].prefix = prefixes[start:end:end]
		start = end
	}
	plan.size += len(prefixes)
	return plan
}

// valueBytes is a guess of the bytes of each field's value, enough for most pets: a
// plan's size, by which the first pet of a list makes room for the others.
var valueBytes = [...]int{petTypename: 5, petID: 8, petName: 24, petCategoryID: 5, petStatus: 11}

// plainFlatPlan returns the plan of sel when it is plain: fields of Pet only, each without
// directives or selections, which CollectFields groups by response name and nothing else,
// whatever the variables. The plan of a selection of up to maxFlatPlanKey bytes of names is
// made once (flatPlans); nil when sel is not plain or not flat.
func plainFlatPlan(sel ast.SelectionSet) *flatPlan {
	if len(sel) == 0 {
		return nil
	}
	var keyBuf [maxFlatPlanKey]byte
	key := keyBuf[:0] // each field's name and alias, each ended by a 0 byte
	for _, s := range sel {
		f, ok := s.(*ast.Field)
		if !ok || len(f.Directives) > 0 || len(f.SelectionSet) > 0 {
			return nil
		}
		key = append(append(append(append(key, f.Name...), 0), f.Alias...), 0)
	}
	cached := len(key) <= maxFlatPlanKey
	if cached {
		flatPlansMu.RLock()
		plan, ok := flatPlans[string(key)]
		flatPlansMu.RUnlock()
		if ok {
			return plan
		}
	}
	fields := make([]graphql.CollectedField, 0, len(sel))
	for _, s := range sel {
		f := s.(*ast.Field)
		if !slices.ContainsFunc(fields, func(c graphql.CollectedField) bool { return c.Alias == f.Alias }) {
			fields = append(fields, graphql.CollectedField{Field: f})
		}
	}
	plan := newFlatPlan(fields)
	if plan != nil && cached {
		flatPlansMu.Lock()
		if len(flatPlans) >= maxFlatPlans {
			clear(flatPlans)
		}
		flatPlans[string(key)] = plan
		flatPlansMu.Unlock()
	}
	return plan
}

// flatPlans holds the plans of plain selections by their fields' names and aliases, which
// alone make a plan: it holds nothing of a document. It is cleared when it reaches
// maxFlatPlans entries, of at most maxFlatPlanKey bytes of key each.
var (
	flatPlansMu sync.RWMutex
	flatPlans   = map[string]*flatPlan{}
)

const (
	maxFlatPlans   = 1024
	maxFlatPlanKey = 256
)

// MarshalGQL writes the pet as gqlgen's generated _Pet does for the same selection. Into a
// bytes.Buffer, as gqlgen marshals a response, it writes in the buffer's free space, and the
// first pet of a list makes room for the others.
func (e *flatPet) MarshalGQL(w io.Writer) {
	bb, ok := w.(*bytes.Buffer)
	if !ok {
		_, _ = w.Write(e.appendTo(make([]byte, 0, e.plan.size)))
		return
	}
	if e.rest > 0 {
		bb.Grow((e.plan.size + 1) * (e.rest + 1))
	}
	_, _ = bb.Write(e.appendTo(bb.AvailableBuffer()))
}

// appendTo appends the pet to b.
func (e *flatPet) appendTo(b []byte) []byte {
	p := e.pet
	for _, f := range e.plan.fields {
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
	return append(b, '}')
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
