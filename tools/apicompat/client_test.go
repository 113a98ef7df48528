package apicompat

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestGeneratedClientCompiles generates a Go client from each document with oapi-codegen (the
// version that client/doc.go pins) and builds testdata/v1client, a program written against the
// client of the published document, with it: with the published document's client (the program
// is right), then with the current document's, where it must compile unchanged. A new required
// argument, a removed or renamed type, field or method, or a field whose type changed, fails.
func TestGeneratedClientCompiles(t *testing.T) {
	codegen := submatch(t, "../../client/doc.go", `go run (github\.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v[0-9.]+) `)
	runtimeModule := submatch(t, "../../go.mod", `(?m)^\s*(github\.com/oapi-codegen/runtime v\S+)`)
	config := absolute(t, "../../client/oapi-codegen.yaml")
	for name, document := range map[string]string{"published": publishedDocument, "current": currentDocument} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// A module v1client of the program and the generated package v1client/client, which
			// needs the oapi-codegen runtime that the service's module requires (its go.sum).
			module := t.TempDir()
			pkg := filepath.Join(module, "client")
			if err := os.Mkdir(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			goCmd(t, pkg, "run", codegen, "-config", config, absolute(t, document)) // writes openapi.gen.go
			goMod := "module v1client\n\ngo 1.26\n\nrequire " + runtimeModule + "\n"
			if err := os.WriteFile(filepath.Join(module, "go.mod"), []byte(goMod), 0o644); err != nil {
				t.Fatal(err)
			}
			copyFile(t, "../../go.sum", filepath.Join(module, "go.sum"))
			copyFile(t, "testdata/v1client/main.go", filepath.Join(module, "main.go"))
			goCmd(t, module, "build", "-mod=mod", "-o", os.DevNull, ".")
		})
	}
}

// goCmd runs the go command with args in dir, outside any workspace, and fails t with its
// output when it fails.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v in %s: %v\n%s", args, dir, err, out)
	}
}

// submatch returns the first group of the first match of pattern in file.
func submatch(t *testing.T, file, pattern string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(pattern).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no match of %s", file, pattern)
	}
	return string(m[1])
}

// absolute returns the absolute path of file.
func absolute(t *testing.T, file string) string {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// copyFile copies the file from to the file to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
