package graph

import (
	"bytes"

	"github.com/vektah/gqlparser/v2/formatter"
)

// SDL returns the schema that the GraphQL handler serves, printed in the schema definition
// language with its descriptions and deprecations: what code generators read instead of
// running an introspection query.
func SDL() []byte {
	var buf bytes.Buffer
	formatter.NewFormatter(&buf, formatter.WithIndent("  ")).FormatSchema(NewExecutableSchema(Config{}).Schema())
	return buf.Bytes()
}
