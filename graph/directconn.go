package graph

import (
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/models"
)

// The direct answer of petsConnection (direct.go): the plans of its PetConnection and
// PageInfo, and their writing from a page of pets.

// connKind is a field of PetConnection or PageInfo that the direct path writes.
type connKind uint8

const (
	connTypename connKind = iota
	connEdges
	connPageInfo
	infoTypename
	infoHasNext
	infoHasPrevious
	infoStart
	infoEnd
)

// connField is one field of a selection of PetConnection or of its PageInfo, and the bytes
// before its value.
type connField struct {
	kind   connKind
	prefix []byte
	edges  *flatEdgePlan // of connEdges
	info   []connField   // of connPageInfo
}

// connFields returns the plan of a selection of PetConnection, or nil when it is not flat.
func connFields(ec *executionContext, sel ast.SelectionSet) []connField {
	collected := graphql.CollectFields(ec.OperationContext, sel, petConnectionImplementors)
	fields := make([]connField, len(collected))
	for i, f := range collected {
		if f.IsDeferred() {
			return nil
		}
		fields[i].prefix = fieldPrefix(i, f.Alias)
		switch f.Name {
		case "__typename":
			fields[i].kind = connTypename
		case "edges":
			fields[i].kind = connEdges
			if fields[i].edges = ec.newFlatEdgePlan(graphql.CollectFields(ec.OperationContext, f.Selections, petEdgeImplementors)); fields[i].edges == nil {
				return nil
			}
		case "pageInfo":
			fields[i].kind = connPageInfo
			if fields[i].info = infoFields(ec, f.Selections); fields[i].info == nil {
				return nil
			}
		default:
			return nil
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return fields
}

// infoKinds maps the fields of PageInfo to what the direct path writes.
var infoKinds = map[string]connKind{
	"__typename": infoTypename, "hasNextPage": infoHasNext, "hasPreviousPage": infoHasPrevious,
	"startCursor": infoStart, "endCursor": infoEnd,
}

// infoFields returns the plan of a selection of PageInfo, or nil when it is not flat.
func infoFields(ec *executionContext, sel ast.SelectionSet) []connField {
	collected := graphql.CollectFields(ec.OperationContext, sel, pageInfoImplementors)
	fields := make([]connField, len(collected))
	for i, f := range collected {
		kind, ok := infoKinds[f.Name]
		if !ok || f.IsDeferred() {
			return nil
		}
		fields[i] = connField{kind: kind, prefix: fieldPrefix(i, f.Alias)}
	}
	if len(fields) == 0 {
		return nil
	}
	return fields
}

// fieldPrefix returns the bytes before the value of the ith field of an object, named alias.
func fieldPrefix(i int, alias string) []byte {
	b := []byte{','}
	if i == 0 {
		b[0] = '{'
	}
	return append(appendGQLString(b, alias), ':')
}

// appendConn appends the connection of pets, more whether more pets follow, as fields select.
func appendConn(b []byte, fields []connField, pets []models.Pet, more bool) []byte {
	for _, f := range fields {
		b = append(b, f.prefix...)
		switch f.kind {
		case connTypename:
			b = append(b, `"PetConnection"`...)
		case connEdges:
			b = append(b, '[')
			for i := range pets {
				if i > 0 {
					b = append(b, ',')
				}
				b = f.edges.appendEdge(b, &pets[i], nil)
			}
			b = append(b, ']')
		case connPageInfo:
			b = appendPageInfo(b, f.info, pets, more)
		}
	}
	return append(b, '}')
}

// appendPageInfo appends the PageInfo of pets as fields select.
func appendPageInfo(b []byte, fields []connField, pets []models.Pet, more bool) []byte {
	for _, f := range fields {
		b = append(b, f.prefix...)
		switch {
		case f.kind == infoTypename:
			b = append(b, `"PageInfo"`...)
		case f.kind == infoHasNext && more:
			b = append(b, "true"...)
		case f.kind == infoHasNext || f.kind == infoHasPrevious:
			b = append(b, "false"...)
		case len(pets) == 0:
			b = append(b, "null"...)
		case f.kind == infoStart:
			b = appendCursor(b, pets[0].ID)
		default: // infoEnd
			b = appendCursor(b, pets[len(pets)-1].ID)
		}
	}
	return append(b, '}')
}

// appendCursor appends the cursor of the pet with id as a GraphQL string: its characters
// (base64url) need no escaping.
func appendCursor(b []byte, id int64) []byte {
	return append(models.AppendCursor(append(b, '"'), id), '"')
}
