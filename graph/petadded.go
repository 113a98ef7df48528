package graph

import (
	"bytes"
	"context"
	"io"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/live"
	"petstore/models"
)

// An event of the petAdded subscription goes to every subscriber of the instance at once, and
// gqlgen's generic execution renders it once per subscriber: per field a field context, a
// context value, closures and a boxed value, some 58 allocations each time. Yet one event
// written for one selection is the same bytes for every subscriber. So an event whose
// selection is flat (cursor and __typename of PetAdded, and a flat selection of its pet, as
// flatpets.go writes lists) is written once per shape of selection, by the flat path's
// writers, and kept with the event (live.Event.Render) for every subscriber whose selection
// has the same shape: the same fields in the same order under the same response names,
// however the document spells them (aliases, fragments, @skip and @include). The output is
// byte for byte what gqlgen writes (TestPetAddedMatchesGeneric and FuzzPetAdded compare the
// two). `make generate` points the generated marshaller of PetAdded here (tools/gqlgen).
//
// Like the flat path of lists, this runs no field interceptor (TestNoFieldInterceptors):
// PetAdded's and Pet's fields are not resolvers, which Options.Tracer alone spans. Anything
// else, such as a deferred fragment or an event without a pet, takes gqlgen's path.

// Codes of PetAdded's fields in a shape key.
const (
	shapeTypename = 't'
	shapeCursor   = 'c'
	shapePet      = 'p'
	shapePetOpen  = '{' // the pet's fields follow, each its petField code ('0' + petField)
	shapePetClose = '}'
)

// petAddedShapes maps the field names of PetAdded to their codes in a shape key.
var petAddedShapes = map[string]byte{"__typename": shapeTypename, "cursor": shapeCursor, "pet": shapePet}

// marshalPetAdded writes ev as gqlgen's generated _PetAdded does for sel, from the event's
// shared rendering when sel is flat.
func (ec *executionContext) marshalPetAdded(ctx context.Context, sel ast.SelectionSet, ev *live.Event) graphql.Marshaler {
	if ev.Pet != nil {
		var buf [128]byte
		if key, ok := appendPetAddedShape(buf[:0], ec.OperationContext, sel); ok {
			return (*renderedEvent)(ev.Render(key, func() []byte { return ec.renderPetAdded(sel, ev) }))
		}
	}
	return ec._PetAdded(ctx, sel, ev)
}

// appendPetAddedShape appends the shape key of sel, a selection of PetAdded, to key: each
// field's code, response name and a 0 byte, the pet's fields between shapePetOpen and
// shapePetClose. It reports false when sel is not flat.
func appendPetAddedShape(key []byte, oc *graphql.OperationContext, sel ast.SelectionSet) ([]byte, bool) {
	fields := graphql.CollectFields(oc, sel, petAddedImplementors)
	if len(fields) == 0 {
		return key, false
	}
	for _, f := range fields {
		code, ok := petAddedShapes[f.Name]
		if !ok || f.IsDeferred() {
			return key, false
		}
		key = append(append(append(key, code), f.Alias...), 0)
		if code != shapePet {
			continue
		}
		pet := graphql.CollectFields(oc, f.Selections, petImplementors)
		if !isFlatPet(pet) {
			return key, false
		}
		key = append(key, shapePetOpen)
		for _, p := range pet {
			key = append(append(append(key, '0'+byte(petFields[p.Name])), p.Alias...), 0)
		}
		key = append(key, shapePetClose)
	}
	return key, true
}

// isFlatPet reports whether the collected fields of a selection of Pet are flat, as
// marshalFlatPets decides: at least one, each a field of petFields, none deferred.
func isFlatPet(collected []graphql.CollectedField) bool {
	for _, f := range collected {
		if _, ok := petFields[f.Name]; !ok || len(f.Selections) > 0 || f.IsDeferred() {
			return false
		}
	}
	return len(collected) > 0
}

// renderPetAdded writes ev for sel, a flat selection of PetAdded (appendPetAddedShape); its
// pet as the flat path of a list of pets writes it.
func (ec *executionContext) renderPetAdded(sel ast.SelectionSet, ev *live.Event) []byte {
	b := bytes.NewBuffer(make([]byte, 0, 160))
	for i, f := range graphql.CollectFields(ec.OperationContext, sel, petAddedImplementors) {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		b.Write(append(appendGQLString([]byte{sep}, f.Alias), ':'))
		switch petAddedShapes[f.Name] {
		case shapeTypename:
			b.WriteString(`"PetAdded"`)
		case shapeCursor:
			b.Write(appendGQLString(nil, ev.Cursor))
		case shapePet:
			ec.marshalFlatPets(f.Selections, []*models.Pet{ev.Pet})[0].MarshalGQL(b)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// renderedEvent is a live.Rendering written as it is.
type renderedEvent live.Rendering

// MarshalGQL writes the rendering's bytes.
func (r *renderedEvent) MarshalGQL(w io.Writer) { _, _ = w.Write(r.JSON) }
