package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWebhookReceivers runs the receivers of docs/webhooks.md as written, the Go one with the
// Standard Webhooks Go library (from the module cache) and the Node one with the npm package
// standardwebhooks (pinned in tools/readme-js): each is registered, a pet is added, and the
// receiver must print that it verified the delivery. Where node or tools/readme-js's packages
// are missing the Node part skips, saying so.
func TestWebhookReceivers(t *testing.T) {
	doc, err := os.ReadFile("../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	receivers := string(doc)[strings.Index(string(doc), "## Receivers"):]
	t.Run("go", func(t *testing.T) {
		dir := t.TempDir()
		sum, err := os.ReadFile("../go.sum")
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for l := range strings.Lines(string(sum)) {
			if strings.HasPrefix(l, "github.com/standard-webhooks/") {
				lines = append(lines, l)
			}
		}
		files := map[string]string{
			"main.go": codeBlock(t, receivers, "go"),
			"go.mod":  "module receiver\n\ngo 1.26\n\nrequire github.com/standard-webhooks/standard-webhooks/libraries v0.0.1\n",
			"go.sum":  strings.Join(lines, ""),
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		build := exec.Command("go", "build", "-o", "receiver", ".")
		build.Dir, build.Env = dir, append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build of the Go receiver: %v\n%s", err, out)
		}
		checkReceiver(t, func(env []string) *lineProcess {
			return startLines(t, dir, env, "sh", "-c", "exec ./receiver 2>&1")
		})
	})
	t.Run("node", func(t *testing.T) {
		node, modules := nodePackages(t, readmeOnline(), "npm ci in tools/readme-js")
		snippet := codeBlock(t, receivers, "js")
		checkReceiver(t, func(env []string) *lineProcess { return startNodeSnippet(t, node, modules, snippet, env) })
	})
}

// codeBlock returns the first fenced block of lang in text.
func codeBlock(t *testing.T, text, lang string) string {
	t.Helper()
	_, after, ok := strings.Cut(text, "```"+lang+"\n")
	block, _, closed := strings.Cut(after, "```")
	if !ok || !closed {
		t.Fatalf("docs/webhooks.md has no %s block under Receivers", lang)
	}
	return block
}

// checkReceiver registers a receiver on a free loopback port, starts it with start (given its
// secret and port), adds a pet, and waits for the receiver to print that it verified it.
func checkReceiver(t *testing.T, start func(env []string) *lineProcess) {
	api := newHookAPI(t, dbtestSQLite(t), hookConfig(200*time.Millisecond, 500*time.Millisecond, time.Second, time.Second))
	port := freePorts(t, 1)[0]
	_, secret := api.createHook(t, fmt.Sprintf("http://127.0.0.1:%d/hooks", port))
	p := start(append(os.Environ(), "WEBHOOK_SECRET="+secret, fmt.Sprint("PORT=", port)))
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			p.fatalf(t, "the receiver does not listen on %d after 15 s", port)
		}
	}
	api.do(t, post("/v1/pets", `{"name":"Hooked","categoryId":1}`))
	deadline := time.After(15 * time.Second)
	for line := p.next(t, deadline, "the receiver"); !strings.Contains(line, "verified msg_"); line = p.next(t, deadline, "the receiver") {
		t.Logf("the receiver printed %q", line)
	}
}
