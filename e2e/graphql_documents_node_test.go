package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/app"
	"petstore/graph"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestDocumentsFromClientTools: the manifests that graphql-codegen's client preset
// (persistedDocuments) and Apollo's generate-persisted-query-manifest write for the small app
// of tools/trusted-docs are taken by documents add; under PETSTORE_DOCUMENTS=ids the codegen
// documents run by the documentId its clients send, and Apollo Client's persisted-query link,
// its ids generated from Apollo's manifest, runs the app's operations by id alone.
func TestDocumentsFromClientTools(t *testing.T) {
	t.Parallel()
	node, modules := nodeTool(t, "trusted-docs", os.Getenv("CI") == "true", "tools/trusted-docs/run.sh")
	appDir, out := filepath.Dir(modules), t.TempDir()
	env := append(os.Environ(), "TRUSTED_DOCS_OUT="+out)
	for _, tool := range [][]string{
		{filepath.Join(modules, ".bin", "graphql-codegen"), "--config", "codegen.cjs"},
		{filepath.Join(modules, ".bin", "generate-persisted-query-manifest"), "--config", "persisted-query-manifest.config.cjs"},
	} {
		runNode(t, appDir, env, node, tool...)
	}
	codegen, apollo := filepath.Join(out, "gql", "persisted-documents.json"), filepath.Join(out, "persisted-query-manifest.json")

	dsn := dbtest.DSN(t, "sqlite")
	if o, err := runCmd(t, dsn, "documents", "add", codegen, apollo); err != nil || !strings.Contains(o, "added 6 documents") {
		t.Fatalf("documents add: %v\n%s", err, o)
	}
	db, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg := app.DefaultConfig()
	cfg.GraphQL.DocumentsMode = string(graph.DocumentsIDs)
	s := newLiveServer(t, db, nil, cfg, "business")

	var ids map[string]string
	b, _ := os.ReadFile(codegen)
	if err := json.Unmarshal(b, &ids); err != nil {
		t.Fatal(err)
	}
	for id, body := range ids {
		if !strings.HasPrefix(body, "query ListPets") {
			continue
		}
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/graphql", strings.NewReader(fmt.Sprintf(`{"documentId":%q,"variables":{"limit":2}}`, id)))
		req.Header.Set("Authorization", "Bearer "+s.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("codegen's ListPets by documentId %s: %d; want 200", id, resp.StatusCode)
		}
	}

	got := runNode(t, appDir, append(env, "PETSTORE_URL="+s.url+"/v1", "PETSTORE_KEY="+s.key), node, "run.mjs")
	want := "created Trusted\ngot Trusted\nlisted 1\nsent POST without text\nsent GET without text\nsent GET without text"
	if got != want {
		t.Fatalf("Apollo Client by id:\n%s\nwant:\n%s", got, want)
	}
}

// runNode runs node with args in dir and returns its output, trimmed; it fails t when node fails.
func runNode(t *testing.T, dir string, env []string, node string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir, cmd.Env = dir, env
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return strings.TrimSpace(string(b))
}
