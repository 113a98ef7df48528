package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeGoVersion: the Go version that the README asks for is the go line of go.mod, which
// the toolchain enforces.
func TestReadmeGoVersion(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Go " + string(m[1]) + " (the `go` line of `go.mod`)"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q", want)
	}
}
