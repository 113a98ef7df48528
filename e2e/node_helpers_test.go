package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"petstore/testkit/dbtest"
)

// nodePackages returns node and tools/readme-js/node_modules, the packages of the Node snippets
// of README.md and docs/subscriptions.md. Where either is missing it skips t, naming installer
// (what installs them), or fails it when required.
func nodePackages(t testing.TB, required bool, installer string) (node, modules string) {
	t.Helper()
	return nodeTool(t, "readme-js", required, installer)
}

// nodeTool returns node and tools/NAME/node_modules, skipping t (naming installer) or failing
// it when required, where either is missing.
func nodeTool(t testing.TB, name string, required bool, installer string) (node, modules string) {
	t.Helper()
	modules, err := filepath.Abs("../tools/" + name + "/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(modules)
	}
	if err != nil {
		need := "node and tools/" + name + "/node_modules (" + installer + " installs them) missing"
		if required {
			t.Fatalf("the Node tests need %s: %v", need, err)
		}
		dbtest.Skip(t, need, err)
	}
	return node, modules
}

// startNodeSnippet runs snippet as subscribe.mjs with node, in a directory of its own whose
// node_modules is modules, with env; it is stopped when t ends.
func startNodeSnippet(t testing.TB, node, modules, snippet string, env []string) *lineProcess {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "subscribe.mjs"), []byte(snippet), 0o644); err != nil {
		t.Fatal(err)
	}
	return startLines(t, dir, env, node, "subscribe.mjs")
}
