package graph

import (
	"bytes"
	"io"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/models"
)

// A page of petsConnection, { edges { cursor node { id name categoryId status } } }, is the
// other list front ends query most, and gqlgen's generic execution spends some 10 µs on each
// edge: an object of two fields around a Pet of four, each field with its field context,
// closures and boxed value, 90 allocations an edge. An edge's fields are plain struct fields
// that cannot fail, as a Pet's are. So the edges of a connection whose selection is flat
// (cursor, __typename, and node with a flat selection of Pet, flatpets.go) are written
// straight from the structs, the node by the flat path of a Pet. The output is byte for byte
// what gqlgen writes (TestFlatListsMatchGeneric and FuzzFlatLists run both paths). Anything
// else (a deferred fragment, a nil edge or node) takes gqlgen's path.

// edgeField is a field of PetEdge that the flat path writes.
type edgeField uint8

const (
	edgeTypename edgeField = iota
	edgeCursor
	edgeNode
)

// flatEdgeField is one field of a flat selection of PetEdge: what to write, and the bytes
// before its value (`{"alias":` for the first field, `,"alias":` for the others).
type flatEdgeField struct {
	kind   edgeField
	prefix []byte
}

// flatEdgePlan is what the flat path writes of each edge of a selection: its fields in order,
// and the plan of its node, shared by every node field (several aliases of node have their
// own plans).
type flatEdgePlan struct {
	fields []flatEdgeField
	nodes  []*flatPlan // the plan of each edgeNode field, in order
	size   int         // a guess of the bytes of one edge
}

// flatEdge is one element of a flat list of edges.
type flatEdge struct {
	plan *flatEdgePlan
	edge *PetEdge
	rest int // for the first element, how many follow it; 0 for the others
}

// marshalFlatEdges returns the elements of edges as marshallers of the flat path, or nil when
// sel is not flat or an edge or its node is nil (gqlgen's path then reports the null).
func (ec *executionContext) marshalFlatEdges(sel ast.SelectionSet, edges []*PetEdge) graphql.Array {
	plan := ec.newFlatEdgePlan(graphql.CollectFields(ec.OperationContext, sel, petEdgeImplementors))
	if plan == nil {
		return nil
	}
	elems := make([]flatEdge, len(edges))
	ret := make(graphql.Array, len(edges))
	for i, e := range edges {
		if e == nil || e.Node == nil {
			return nil
		}
		elems[i] = flatEdge{plan: plan, edge: e}
		ret[i] = &elems[i]
	}
	if len(elems) > 0 {
		elems[0].rest = len(elems) - 1
	}
	return ret
}

// newFlatEdgePlan returns the plan of the collected fields of a selection of PetEdge, or nil
// when they are not flat: none, or one that is deferred or not a field of PetEdge, or a node
// whose selection is not flat.
func (ec *executionContext) newFlatEdgePlan(fields []graphql.CollectedField) *flatEdgePlan {
	if len(fields) == 0 {
		return nil
	}
	plan := &flatEdgePlan{fields: make([]flatEdgeField, len(fields)), size: 1}
	for i, f := range fields {
		if f.IsDeferred() {
			return nil
		}
		prefix := fieldPrefix(i, f.Alias)
		field := flatEdgeField{prefix: prefix}
		switch f.Name {
		case "__typename":
			field.kind = edgeTypename
			plan.size += len(`"PetEdge"`)
		case "cursor":
			field.kind = edgeCursor
			plan.size += 24
		case "node":
			node := plainFlatPlan(f.Selections)
			if node == nil {
				node = newFlatPlan(graphql.CollectFields(ec.OperationContext, f.Selections, petImplementors))
			}
			if node == nil {
				return nil
			}
			field.kind = edgeNode
			plan.nodes = append(plan.nodes, node)
			plan.size += node.size
		default:
			return nil
		}
		plan.fields[i] = field
		plan.size += len(prefix)
	}
	return plan
}

// MarshalGQL writes the edge as gqlgen's generated _PetEdge does for the same selection. Into
// a bytes.Buffer, as gqlgen marshals a response, it writes in the buffer's free space, and the
// first edge of a list makes room for the others.
func (e *flatEdge) MarshalGQL(w io.Writer) {
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

// appendTo appends the edge to b.
func (e *flatEdge) appendTo(b []byte) []byte {
	return e.plan.appendEdge(b, e.edge.Node, &e.edge.Cursor)
}

// appendEdge appends the edge of pet with cursor, or with the pet's cursor (appendCursor)
// when cursor is nil.
func (p *flatEdgePlan) appendEdge(b []byte, pet *models.Pet, cursor *string) []byte {
	nodes := p.nodes
	for _, f := range p.fields {
		b = append(b, f.prefix...)
		switch f.kind {
		case edgeTypename:
			b = append(b, `"PetEdge"`...)
		case edgeCursor:
			if cursor == nil {
				b = appendCursor(b, pet.ID)
			} else {
				b = appendGQLString(b, *cursor)
			}
		case edgeNode:
			b = (&flatPet{plan: nodes[0], pet: pet}).appendTo(b)
			nodes = nodes[1:]
		}
	}
	return append(b, '}')
}
