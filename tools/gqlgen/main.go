// Command gqlgen regenerates graph/generated.go from gqlgen.yml, as `gqlgen generate` does
// (through gqlgen's Go API, at the version pinned in go.mod), and then points the generated
// list marshallers at graph.marshalList instead of gqlgen's MarshalSliceConcurrently: see
// graph/slice.go for why. gqlgen offers no hook for the code of a list marshaller (its plugins
// run before the code is written, and the template is fixed), so the one call is rewritten
// here, and the command fails if gqlgen's output no longer has the call it rewrites.
// graph's TestGeneratedListsUseMarshalList fails when generated.go was made by plain
// `gqlgen generate`. Run it from the module root: `make generate`.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen/config"
)

// The call gqlgen writes in each object-list marshaller (worker limit 0, panic handler kept),
// and what it becomes.
var (
	gqlgenCall = []byte("graphql.MarshalSliceConcurrently(ctx, len(v), 0, false, ")
	ourCall    = []byte("marshalList(ec, ctx, sel, v, ")
)

func main() {
	if err := generate(); err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(1)
	}
}

func generate() error {
	cfg, err := config.LoadConfigFromDefaultLocations()
	if err != nil {
		return err
	}
	if err := api.Generate(cfg); err != nil {
		return err
	}
	path := cfg.Exec.Filename
	code, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	n := bytes.Count(code, gqlgenCall)
	if n == 0 {
		return errors.New(path + ": gqlgen wrote no list marshaller of the expected form; update tools/gqlgen")
	}
	if err := os.WriteFile(path, bytes.ReplaceAll(code, gqlgenCall, ourCall), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d list marshallers call marshalList\n", path, n)
	return nil
}
