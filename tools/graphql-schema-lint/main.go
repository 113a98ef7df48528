// Command graphql-schema-lint writes the GraphQL schema as the service serves it
// (graph.SDL, GET /v1/graphql/schema.graphql) to the file named by its one argument. run.sh
// lints that file.
package main

import (
	"fmt"
	"os"

	"petstore/graph"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: graphql-schema-lint FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], graph.SDL(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "graphql-schema-lint:", err)
		os.Exit(1)
	}
}
