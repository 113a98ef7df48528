package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"petstore/testkit/dbtest"
)

// TestReadme runs the snippets of README.md (and the Node ones of docs/subscriptions.md) as
// written against the program started as `make run` starts it: serve, on the SQLite default
// (./petstore.db, fresh, in a temporary directory), on a free port of every interface. Only the
// key (the printed one for the README's) and the port (for 8080) are substituted, and [::] on
// a host without IPv6. It checks
//   - the start-up text of "Two commands" against the banner, line for line;
//   - the "Calling it" block, each command run with bash in order: the output shown in a
//     comment below a command is its output, and the Server-Sent Events stream shows the event
//     shown when the block's first command runs again;
//   - the Go client snippet, in the run function of a program of a new module beside the
//     checkout, made with the README's go mod line, run with go run;
//   - the Node snippets, with the packages pinned in tools/readme-js (graphql-ws and ws,
//     graphql-sse): each prints a pet added after it subscribed.
//
// make test downloads nothing: the go commands are offline (GOPROXY=off), and the Node snippet
// runs only where tools/readme-js/node_modules is installed; each part skips, saying so,
// where what it needs is missing. make lint installs those packages and runs this test with
// PETSTORE_TEST_README_ONLINE=1: the go mod line may then download from the module proxy, and
// nothing skips. bash and curl missing skip the test, and fail it there and where services are
// required.
func TestReadme(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if dbtest.Required() || readmeOnline() {
				t.Fatalf("%s is required to run the README's snippets: %v", tool, err)
			}
			dbtest.Skip(t, tool+" missing", err)
		}
	}
	readme := readFences(t, "../README.md")
	s := startAsMakeRun(t)
	t.Run("banner", func(t *testing.T) {
		checkBanner(t, readme.only(t, "Two commands", ""), s)
	})
	t.Run("calling", func(t *testing.T) {
		runShellBlock(t, readme.only(t, "Calling it", "sh"), s)
	})
	t.Run("go client", func(t *testing.T) {
		m := newSnippetModule(t, readme.only(t, "The Go client", "go"), s)
		t.Run("go mod line", func(t *testing.T) { m.useCheckout(t, readme.only(t, "The Go client", "sh")) })
		m.runProgram(t)
	})
	t.Run("node client", func(t *testing.T) {
		snippets := map[string]bool{}
		for _, doc := range []string{"../README.md", "../docs/subscriptions.md"} {
			for _, f := range readFences(t, doc) {
				if f.lang == "js" {
					snippets[f.body] = true
				}
			}
		}
		if len(snippets) == 0 {
			t.Fatal("no js block in README.md or docs/subscriptions.md")
		}
		for snippet := range snippets {
			runNodeSnippet(t, snippet, s)
		}
	})
}

// fence is a fenced code block of a Markdown document.
type fence struct {
	section string // the title of the "## " heading it is under
	lang    string // the info string: sh, go, js or none
	body    string // its lines, each ending in a newline
}

type fences []fence

// readFences returns the fenced code blocks of the Markdown document at path.
func readFences(t *testing.T, path string) fences {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		fs      fences
		section string
		open    *fence
	)
	for line := range strings.Lines(string(doc)) {
		switch {
		case open != nil && strings.TrimSpace(line) == "```":
			fs = append(fs, *open)
			open = nil
		case open != nil:
			open.body += line
		case strings.HasPrefix(line, "```"):
			open = &fence{section: section, lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
		case strings.HasPrefix(line, "## "):
			section = strings.TrimSpace(strings.TrimPrefix(line, "## "))
		}
	}
	if open != nil {
		t.Fatalf("%s: a code block of %q is not closed", path, open.section)
	}
	return fs
}

// only returns the one block of lang under the heading section.
func (fs fences) only(t *testing.T, section, lang string) string {
	t.Helper()
	var found []string
	for _, f := range fs {
		if f.section == section && f.lang == lang {
			found = append(found, f.body)
		}
	}
	if len(found) != 1 {
		t.Fatalf("README.md: %d blocks of %q under %q; want 1", len(found), lang, section)
	}
	return found[0]
}

// madeRun is the server that TestReadme starts.
type madeRun struct {
	banner []string // what it printed up to its last start-up line
	key    string   // the development key it printed
	listen string   // the address it listens on: [::]:port, or 0.0.0.0:port on a host without IPv6
	port   string   // its port
	base   string   // its address on the loopback interface, http://localhost:port
}

// local returns snippet with localhost:8080 made the server's address.
func (s *madeRun) local(snippet string) string {
	return strings.ReplaceAll(snippet, "localhost:8080", "localhost:"+s.port)
}

// startAsMakeRun runs this test binary as `petstore serve` in a temporary directory, with no
// PETSTORE_ setting but a free port of every interface (PETSTORE_ADDR=:0), as make run does on
// 8080; it is killed when t ends.
func startAsMakeRun(t *testing.T) *madeRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PETSTORE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PETSTORE_TEST_AS_BINARY=1", "PETSTORE_ADDR=:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout := startPiped(t, cmd)
	s := &madeRun{}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		s.banner = append(s.banner, lines.Text())
		if strings.HasPrefix(lines.Text(), "petstore_test_") {
			s.key = lines.Text()
		}
		if addr, ok := strings.CutPrefix(lines.Text(), "petstore listening on http://"); ok {
			s.listen = strings.Fields(addr)[0]
			_, s.port, _ = net.SplitHostPort(s.listen)
		}
		if strings.HasPrefix(lines.Text(), "GraphQL playground: ") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	if s.key == "" || s.port == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("serve printed no key or no address:\n%s\nstderr:\n%s",
			strings.Join(s.banner, "\n"), stderr.String())
	}
	s.base = "http://localhost:" + s.port
	waitHealthy(t, s.base)
	return s
}

// checkBanner: the start-up text of the README is the banner of a first start, line for line,
// but for the key, the port, and the address listened on where the host has no IPv6.
func checkBanner(t *testing.T, block string, s *madeRun) {
	want := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	var readmeKey string
	for _, line := range want {
		if strings.HasPrefix(line, "petstore_test_") {
			readmeKey = line
		}
	}
	if len(readmeKey) != len(s.key) {
		t.Errorf("the README's key %q has not the length of a real one, %q", readmeKey, s.key)
	}
	for i := range want {
		want[i] = strings.ReplaceAll(want[i], readmeKey, s.key)
		want[i] = strings.ReplaceAll(want[i], "http://[::]:8080", "http://"+s.listen)
		want[i] = strings.ReplaceAll(want[i], ":8080", ":"+s.port)
	}
	if strings.Join(s.banner, "\n") != strings.Join(want, "\n") {
		t.Errorf("the first start printed\n%s\nwhere the README shows (key and port substituted)\n%s",
			strings.Join(s.banner, "\n"), strings.Join(want, "\n"))
	}
}

// shellCommand is a command of a sh block: its text (continuation lines included) and the
// output shown in the comments below it, if any.
type shellCommand struct {
	text  string
	shown []string
}

var (
	// shownOutput matches a comment that shows the output of the command above it.
	shownOutput = regexp.MustCompile(`^# (\{|\[|event: |data: )`)
	// assignment matches a line that sets a shell variable.
	assignment = regexp.MustCompile(`^[A-Z]+=`)
)

// parseShellBlock splits a sh block into its leading variable assignments and its commands;
// other comments and blank lines are skipped.
func parseShellBlock(block string) (assignments []string, cmds []shellCommand) {
	var continued bool
	for line := range strings.Lines(block) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case continued:
			cmds[len(cmds)-1].text += "\n" + line
		case shownOutput.MatchString(line) && len(cmds) > 0:
			cmds[len(cmds)-1].shown = append(cmds[len(cmds)-1].shown, strings.TrimPrefix(line, "# "))
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		case len(cmds) == 0 && assignment.MatchString(line):
			assignments = append(assignments, line)
		default:
			cmds = append(cmds, shellCommand{text: line})
		}
		continued = strings.HasSuffix(line, `\`)
	}
	return assignments, cmds
}

// runShellBlock runs the commands of the "Calling it" block in order, each with bash after the
// block's assignments (KEY set to the real key), and checks what each prints against the
// output shown below it. A command without output shown must print something that is no
// error. The Server-Sent Events command (curl -N) runs until it has shown its event, while
// the block's first command runs again.
func runShellBlock(t *testing.T, block string, s *madeRun) {
	assignments, cmds := parseShellBlock(s.local(block))
	keyLine := regexp.MustCompile(`^KEY=\S+`)
	var prelude string
	for _, a := range assignments {
		if keyLine.MatchString(a) {
			a = keyLine.ReplaceAllLiteralString(a, "KEY="+s.key)
		}
		prelude += a + "\n"
	}
	if !strings.Contains(prelude, "KEY="+s.key) {
		t.Fatalf("the block sets no KEY before its first command:\n%s", block)
	}
	if len(cmds) == 0 || !strings.Contains(cmds[0].text, "-d ") || !strings.Contains(cmds[0].text, "/v1/pets") {
		t.Fatalf("the block's first command must add a pet (the SSE stream shows the pet it adds when run again):\n%s", block)
	}
	for _, c := range cmds {
		if strings.Contains(c.text, "curl -N") {
			checkStream(t, prelude, c, cmds[0], s)
			continue
		}
		out, err := bashOutput(prelude + c.text)
		got := strings.TrimSuffix(out, "\n")
		switch {
		case err != nil:
			t.Errorf("%s\nfailed: %v\n%s", c.text, err, out)
		case c.shown != nil && got != strings.Join(c.shown, "\n"):
			t.Errorf("%s\nprinted\n%s\nwhere the README shows\n%s", c.text, got, strings.Join(c.shown, "\n"))
		case c.shown == nil:
			checkUnshown(t, c.text, out)
		}
	}
}

// bashOutput runs script with bash and returns its stdout, and its stderr in an error.
func bashOutput(script string) (string, error) {
	cmd := exec.Command("bash", "-c", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, stderr.String())
	}
	return string(out), err
}

// checkUnshown checks the output of a command whose output the README does not show: not
// empty, no error answer (an Error body, or GraphQL errors), a 2xx status where it prints its
// headers (-i), and the headers its comment names ("see the X/Y headers").
func checkUnshown(t *testing.T, command, out string) {
	t.Helper()
	var answer struct {
		Code   string          `json:"code"`
		Errors json.RawMessage `json:"errors"`
	}
	_, body, _ := strings.Cut(out, "\r\n\r\n") // the body, after the headers of -i
	if !strings.Contains(command, " -i ") {
		body = out
	}
	if strings.TrimSpace(out) == "" || json.Unmarshal([]byte(body), &answer) == nil && (answer.Code != "" || answer.Errors != nil) {
		t.Errorf("%s\nprinted %.300q; want an answer that is no error", command, out)
	}
	if !strings.Contains(command, " -i ") {
		return
	}
	if !regexp.MustCompile(`^HTTP/[0-9.]+ 2\d\d `).MatchString(out) {
		t.Errorf("%s\nprinted %.300q; want a 2xx status line first", command, out)
	}
	if m := regexp.MustCompile(`see the ([\w/-]+) headers`).FindStringSubmatch(command); m != nil {
		for name := range strings.SplitSeq(m[1], "/") {
			if !regexp.MustCompile(`(?im)^` + name + `: `).MatchString(out) {
				t.Errorf("%s\nprinted no %s header:\n%s", command, name, out)
			}
		}
	}
}

// checkStream runs the Server-Sent Events command c until the stream has shown as many event
// lines as the README shows below it, once it has subscribed and adder (the command that adds
// a pet) has run again, and compares them; the stream's comment lines (":", keep-alives) and
// blank lines are left out.
func checkStream(t *testing.T, prelude string, c, adder shellCommand, s *madeRun) {
	t.Helper()
	if len(c.shown) == 0 {
		t.Fatalf("%s\nshows no event below it", c.text)
	}
	p := startLines(t, "", nil, "bash", "-c", prelude+c.text)
	defer func() { p.stop(); waitActive(t, s.base, 0) }()
	p.waitSubscribed(t, s.base, 1, c.text)
	if out, err := bashOutput(prelude + adder.text); err != nil {
		t.Fatalf("%s\nfailed: %v\n%s", adder.text, err, out)
	}
	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < len(c.shown) {
		line := p.next(t, deadline, fmt.Sprintf("%s\n(having shown %q)", c.text, got))
		if line != "" && !strings.HasPrefix(line, ":") {
			got = append(got, line)
		}
	}
	if strings.Join(got, "\n") != strings.Join(c.shown, "\n") {
		t.Errorf("%s\nshowed\n%s\nwhere the README shows\n%s", c.text, strings.Join(got, "\n"), strings.Join(c.shown, "\n"))
	}
}

// lineProcess is a process started by startLines.
type lineProcess struct {
	lines  chan string   // its stdout, a line at a time; closed at its end
	ended  chan struct{} // closed once it has exited
	stderr bytes.Buffer  // read once it has ended
	stop   func()        // kills it and its children, and waits until it has ended
}

// startLines starts name with args in dir (the test's when empty) and env (the test's when
// nil), in a process group of its own, so that stop ends the commands a shell started too; it
// is stopped when t ends.
func startLines(t testing.TB, dir string, env []string, name string, args ...string) *lineProcess {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &lineProcess{lines: make(chan string, 64), ended: make(chan struct{})}
	cmd.Stderr = &p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	quit := make(chan struct{})
	go func() {
		defer close(p.ended)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			case <-quit:
			}
		}
		close(p.lines)
		_ = cmd.Wait()
	}()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			close(quit)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.ended
		})
	}
	t.Cleanup(p.stop)
	return p
}

// fatalf stops p and fails t with the lines of p not read yet and what p wrote to stderr.
func (p *lineProcess) fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	p.stop()
	var unread []string
	for line := range p.lines {
		unread = append(unread, line)
	}
	t.Fatalf(format+"\nit printed then:\n%s\nits stderr:\n%s", append(args, strings.Join(unread, "\n"), p.stderr.String())...)
}

// waitSubscribed waits, at most 15 s, until the server at base counts n subscriptions, the
// last that of p, the command what.
func (p *lineProcess) waitSubscribed(t *testing.T, base string, n int, what string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); activeSubscriptions(t, base) != n; time.Sleep(50 * time.Millisecond) {
		select {
		case <-p.ended:
			p.fatalf(t, "%s\nended before it subscribed", what)
		default:
		}
		if time.Now().After(deadline) {
			p.fatalf(t, "%s\ndid not subscribe within 15 s", what)
		}
	}
}

// next returns the next line p, the command what, prints, before deadline.
func (p *lineProcess) next(t testing.TB, deadline <-chan time.Time, what string) string {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.fatalf(t, "%s\nended", what)
		}
		return line
	case <-deadline:
		p.fatalf(t, "%s\nprinted no more in time", what)
	}
	return ""
}

// readmeOnline reports whether TestReadme may download modules, and must skip nothing
// (make lint).
func readmeOnline() bool { return os.Getenv("PETSTORE_TEST_README_ONLINE") == "1" }

// snippetModule is a new module beside a checkout (a directory petstore that is this
// repository) whose program runs the Go snippet: package main, its run function the snippet.
// Its go commands are offline (GOPROXY=off) unless readmeOnline: the modules come from the
// module cache, verified against the checksum database when they were downloaded, so that is
// not asked again (GOSUMDB=off).
type snippetModule struct {
	root    string // the checkout
	dir     string // the module's
	program string // its main.go
	env     []string
	uses    bool // go.mod requires the checkout
}

// newSnippetModule makes the module of snippet, for the server of s, with go mod init.
func newSnippetModule(t *testing.T, snippet string, s *madeRun) *snippetModule {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(root, filepath.Join(dir, "petstore")); err != nil {
		t.Fatal(err)
	}
	m := &snippetModule{root: root, dir: filepath.Join(dir, "mine"),
		env: append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off", "KEY="+s.key)}
	if !readmeOnline() {
		m.env = append(m.env, "GOPROXY=off", "GOSUMDB=off")
	}
	m.program = `package main

import (
	"context"
	"fmt"
	"os"

	"petstore/client"
)

func main() {
	if err := run(context.Background(), os.Getenv("KEY")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, key string) error {
` + s.local(snippet) + `	return nil
}
`
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.dir, "main.go"), []byte(m.program), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := m.run("go", "mod", "init", "example.com/mine"); err != nil {
		t.Fatalf("go mod init: %v\n%s", err, out)
	}
	return m
}

// run runs a command in the module's directory and returns its output.
func (m *snippetModule) run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = m.dir, m.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// useCheckout runs the README's go mod line in the module. Offline, it skips where the module
// cache lacks modules that go mod tidy reads (those of the dependencies' tests among them,
// which building the service never downloads); make lint downloads them.
func (m *snippetModule) useCheckout(t *testing.T, modLine string) {
	out, err := m.run("bash", "-c", modLine)
	if err != nil && strings.Contains(out, "disabled by GOPROXY=off") {
		t.Skipf("the module cache lacks modules that go mod tidy reads, so the README's go mod line cannot run offline (make lint runs it with the module proxy); the snippet runs with the checkout's requirements instead:\n%s", out)
	}
	if err != nil {
		t.Fatalf("%s\nfailed: %v\n%s", modLine, err, out)
	}
	m.uses = true
}

// runProgram runs the program with go run: it must print the created pet's id, list that pet,
// then the requests left. Where the go mod line could not run, the module takes the checkout's
// requirements and go.sum, and the checkout.
func (m *snippetModule) runProgram(t *testing.T) {
	if !m.uses {
		for _, name := range []string{"go.mod", "go.sum"} {
			b, err := os.ReadFile(filepath.Join(m.root, name))
			if err == nil {
				err = os.WriteFile(filepath.Join(m.dir, name), b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if out, err := m.run("go", "mod", "edit", "-module=example.com/mine", "-require=petstore@v0.0.0", "-replace=petstore=../petstore"); err != nil {
			t.Fatalf("go mod edit: %v\n%s", err, out)
		}
	}
	out, err := m.run("go", "run", ".")
	if err != nil {
		t.Fatalf("the program with the README's snippet failed: %v\n%s\n%s", err, out, m.program)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	created, ok := strings.CutPrefix(lines[0], "created ")
	if !ok || !slices.Contains(lines, created+" Rex") {
		t.Errorf("the program printed\n%s\nwant the created pet's id, then that pet among those listed", out)
	}
	if _, err := strconv.Atoi(lines[len(lines)-1]); err != nil {
		t.Errorf("the program printed\n%s\nwant the requests left last", out)
	}
}

// runNodeSnippet runs the Node snippet with the packages of tools/readme-js, with KEY set, and
// checks that it prints a pet added once it has subscribed. Without those packages or node it
// skips, naming make lint, or fails where readmeOnline (make lint).
func runNodeSnippet(t *testing.T, snippet string, s *madeRun) {
	node, modules := nodePackages(t, readmeOnline(), "make lint")
	p := startNodeSnippet(t, node, modules, s.local(snippet), append(os.Environ(), "KEY="+s.key))
	defer func() { p.stop(); waitActive(t, s.base, 0) }()
	p.waitSubscribed(t, s.base, 1, "the Node snippet")
	id, ok := postPet(s.base, s.key, "Nodey")
	if !ok {
		t.Fatal("could not add a pet")
	}
	want := fmt.Sprintf("{ id: '%d', name: 'Nodey' }", id)
	deadline := time.After(10 * time.Second)
	for line := p.next(t, deadline, "the Node snippet"); line != want; line = p.next(t, deadline, "the Node snippet") {
		t.Errorf("the Node snippet printed %q; want %q", line, want)
	}
}
