// Command gqlgen regenerates graph/generated.go from gqlgen.yml, as `gqlgen generate` does
// (through gqlgen's Go API, at the version pinned in go.mod), and then points the generated
// list marshallers at graph.marshalList instead of gqlgen's MarshalSliceConcurrently (see
// graph/slice.go for why), and the marshaller of a petAdded event at graph.marshalPetAdded
// (see graph/petadded.go). gqlgen offers no hook for the code of a marshaller (its plugins
// run before the code is written, and the template is fixed), so the calls are rewritten
// here, and the command fails if gqlgen's output no longer has the calls it rewrites.
// graph's TestGeneratedListsUseMarshalList and TestGeneratedPetAddedUsesMarshalPetAdded fail
// when generated.go was made by plain `gqlgen generate`. Run it from the module root:
// `make generate`.
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

// The call gqlgen writes in the marshaller of PetAdded, once, and what it becomes.
var (
	gqlgenPetAdded = []byte("return ec._PetAdded(ctx, sel, v)")
	ourPetAdded    = []byte("return ec.marshalPetAdded(ctx, sel, v)")
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
	if m := bytes.Count(code, gqlgenPetAdded); m != 1 {
		return fmt.Errorf("%s: gqlgen wrote %d calls of %s, not one; update tools/gqlgen", path, m, gqlgenPetAdded)
	}
	code = bytes.ReplaceAll(code, gqlgenCall, ourCall)
	code = bytes.ReplaceAll(code, gqlgenPetAdded, ourPetAdded)
	if err := os.WriteFile(path, code, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d list marshallers call marshalList, PetAdded's calls marshalPetAdded\n", path, n)
	return nil
}
