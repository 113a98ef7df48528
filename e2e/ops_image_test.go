//go:build image

package e2e

import (
	"archive/tar"
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestImage checks the image `make image` built (PETSTORE_TEST_IMAGE, with the engine of
// PETSTORE_TEST_ENGINE): its configuration, its files, and the static binary taken out of it,
// which must serve on the embedded SQLite default in its working directory. Containers cannot
// be run on every machine that builds the image, so the test runs the binary itself.
func TestImage(t *testing.T) {
	image, engine := os.Getenv("PETSTORE_TEST_IMAGE"), strings.Fields(os.Getenv("PETSTORE_TEST_ENGINE"))
	if image == "" || len(engine) == 0 {
		t.Skip("PETSTORE_TEST_IMAGE and PETSTORE_TEST_ENGINE unset: run make image-test")
	}
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(engine[0], append(engine[1:], args...)...).Output()
		if err != nil {
			t.Fatalf("%s %s: %v", strings.Join(engine, " "), strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	format := "{{.Config.User}} {{.Config.WorkingDir}} {{.Config.Entrypoint}} {{.Config.Cmd}} {{.Config.Env}}"
	if got := cli("image", "inspect", "--format", format, image); !strings.HasPrefix(got, "65532:65532 /data [/petstore] [serve] [") || !strings.Contains(got, "TMPDIR=/data") {
		t.Errorf("image config: got %q; want user 65532:65532, working directory /data, /petstore serve, TMPDIR=/data", got)
	}
	container := cli("create", image)
	defer cli("rm", container)
	export := exec.Command(engine[0], append(engine[1:], "export", container)...)
	stream, err := export.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := export.Start(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	binary := filepath.Join(dir, "petstore")
	checkImageFiles(t, tar.NewReader(stream), binary)
	if err := export.Wait(); err != nil {
		t.Fatal(err)
	}
	checkStatic(t, binary)
	checkLabels(t, cli("image", "inspect", "--format",
		`{{index .Config.Labels "org.opencontainers.image.version"}} {{index .Config.Labels "org.opencontainers.image.revision"}}`, image), binary)
	serveFromImage(t, binary)
}

// checkLabels checks that the image's OCI version and revision labels (labels: "VERSION
// REVISION") name the build of binary, as its --version reports it, and a real commit.
func checkLabels(t *testing.T, labels, binary string) {
	t.Helper()
	out, err := exec.Command(binary, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", binary, err)
	}
	f := strings.Fields(labels)
	if len(f) != 2 || len(f[1]) != 40 {
		t.Fatalf("OCI labels version and revision: got %q; want a version and a 40-digit commit", labels)
	}
	if want := fmt.Sprintf("petstore %s (commit %s, ", f[0], f[1]); !strings.HasPrefix(string(out), want) {
		t.Errorf("%s --version: got %q; want it to start %q, as the labels say", binary, out, want)
	}
}

// checkImageFiles reads the image's file system from files, checks who owns what, and writes
// /petstore to binary.
func checkImageFiles(t *testing.T, files *tar.Reader, binary string) {
	t.Helper()
	seen := map[string]*tar.Header{}
	for {
		h, err := files.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := "/" + strings.Trim(h.Name, "/")
		seen[name] = h
		if name == "/petstore" {
			writeFile(t, binary, files)
		}
	}
	for _, tt := range []struct {
		path string
		uid  int
		mode os.FileMode
	}{
		{"/petstore", 0, 0o755},
		{"/data", 65532, 0o755},
		{"/etc/ssl/certs/ca-certificates.crt", 0, 0o644},
		{"/etc/passwd", 0, 0o644},
	} {
		h := seen[tt.path]
		if h == nil {
			t.Errorf("%s: missing from the image", tt.path)
			continue
		}
		if mode := h.FileInfo().Mode().Perm(); h.Uid != tt.uid || mode != tt.mode {
			t.Errorf("%s: got owner %d, mode %v; want %d, %v", tt.path, h.Uid, mode, tt.uid, tt.mode)
		}
	}
}

// writeFile writes r to an executable file at path.
func writeFile(t *testing.T, path string, r io.Reader) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		t.Fatal(err)
	}
}

// checkStatic checks that binary needs no dynamic loader and no shared library: FROM scratch has
// neither.
func checkStatic(t *testing.T, binary string) {
	t.Helper()
	f, err := elf.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader; want a static build")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %v; want none", libs)
	}
}

// serveFromImage runs `petstore serve` from binary with no settings but the address, in an empty
// working directory as the image's /data, and checks that it serves, stores a pet in
// ./petstore.db and exits cleanly on SIGTERM.
func serveFromImage(t *testing.T, binary string) {
	t.Helper()
	data := t.TempDir()
	cmd := exec.Command(binary, "serve")
	cmd.Dir = data
	cmd.Env = []string{"PETSTORE_ADDR=127.0.0.1:0", "PETSTORE_LOG_LEVEL=error"}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	base, key := readKeyAndAddress(t, bufio.NewScanner(stdout))
	waitHealthy(t, base)
	if resp, err := http.Get(base + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: got %v %v; want 200", resp, err)
	}
	if _, ok := postPet(base, key, "Rex"); !ok {
		t.Error("POST /v1/pets with the development key: no 201")
	}
	if _, err := os.Stat(filepath.Join(data, "petstore.db")); err != nil {
		t.Errorf("the SQLite default in the working directory: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("no exit after SIGTERM")
	}
}

// readKeyAndAddress reads the development key and the base address that serve prints, and
// drains the rest.
func readKeyAndAddress(t *testing.T, lines *bufio.Scanner) (base, key string) {
	t.Helper()
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "petstore_test_") {
			key = line
		}
		if addr, ok := strings.CutPrefix(line, "petstore listening on "); ok {
			go func() {
				for lines.Scan() {
				}
			}()
			return strings.Fields(addr)[0], key
		}
	}
	t.Fatal("the binary printed no address")
	return "", ""
}
