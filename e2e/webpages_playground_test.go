package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"petstore/testkit/dbtest"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// browserTimeout bounds the life of the browser, its start included; stepsTimeout bounds the
// steps of a test, leaving time for a screenshot when they fail. They are generous because the
// API reference's 4 MiB script alone takes seconds to compile on a busy 2-core machine.
const (
	browserTimeout = 60 * time.Second
	stepsTimeout   = 50 * time.Second
)

// browsers lets one browser run at a time, its browserTimeout counted from its turn: several
// Chromiums compiling the pages' scripts at once, beside the rest of the suite on two cores,
// took each past its timeout.
var browsers = make(chan struct{}, 1)

// requireChromium skips t when Debian's Chromium is missing, or fails it where the services are
// required (CI).
func requireChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		dbtest.Missing(t, "Chromium at "+chromiumPath+" (apt-get install chromium)", err)
	}
}

// devServer runs the program in development on a fresh SQLite database, as a process of its own
// (startServe, so that the browser tests may run in parallel), and returns its base address and
// the development key it printed.
func devServer(t *testing.T) (base, key string) {
	t.Helper()
	_, base, key = startServe(t, "PETSTORE_DB="+dbtest.DSN(t, "sqlite"))
	if key == "" {
		t.Fatal("serve printed no development key")
	}
	return base, key
}

// TestBrowserPlayground loads the playground in headless Chromium from a real server, types the
// API key into the page's key field, runs a pets query with GraphiQL's run button, reads the
// answer off the result pane and finds Query.pet deprecated in the docs explorer. The page must
// load nothing from another origin, get no error status, break no Content-Security-Policy rule
// and throw no script error.
func TestBrowserPlayground(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	base, key := devServer(t)
	if _, ok := postPet(base, key, "Rex"); !ok { // process_test.go: {"name":"Rex","categoryId":1}
		t.Fatal("POST /v1/pets with the development key failed; want 201")
	}

	tab, log := newBrowser(t)
	ctx, cancel := context.WithTimeout(tab, stepsTimeout)
	defer cancel()
	query := url.Values{"query": {"{ pets { id name } }"}}
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/v1/playground?"+query.Encode()),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
		chromedp.SendKeys(chromedp.CSS("#api-key"), key),
		chromedp.Click(chromedp.CSS(".graphiql-execute-button")),
		waitFor(resultText+`.includes('"name": "Rex"')`),
	)
	if err != nil {
		failBrowser(t, tab, log, base, "running { pets { id name } } in the playground", err)
	}
	if err = chromedp.Do(ctx, findDeprecatedPet...); err != nil {
		failBrowser(t, tab, log, base, "finding Query.pet deprecated in the docs explorer", err)
	}
	log.check(t, tab, base)
}

// findDeprecatedPet opens GraphiQL's docs explorer at Query and waits until it shows Query.pet
// as deprecated, with its reason.
var findDeprecatedPet = []chromedp.Action[chromedp.Void]{
	chromedp.Click(chromedp.CSS(`.graphiql-sidebar button[aria-label*="Documentation Explorer"]`)),
	chromedp.Click(chromedp.CSS(".graphiql-doc-explorer-type-name")), // Query
	chromedp.Click(`//button[contains(., "Show Deprecated Fields")]`),
	waitFor(docsText + `.includes('Use pets(status:). Removal on 2030-12-05.')`),
}

// resultText is the text of GraphiQL's result pane (whose editor indents with no-break spaces),
// docsText that of its docs explorer.
const (
	resultText = `(document.querySelector('.result-window') || {innerText: ''}).innerText.replace(/\u00a0/g, ' ')`
	docsText   = `(document.querySelector('.graphiql-doc-explorer') || {innerText: ''}).innerText`
)

// waitFor polls the page until the JavaScript expression is true.
func waitFor(expression string) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[bool](expression, chromedp.WithPollingInterval(50*time.Millisecond))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := poll(ctx, t)
		return chromedp.Void{}, err
	}
}

// failBrowser fails t for the step that ended with err, after reporting what the page got and
// showed.
func failBrowser(t *testing.T, tab context.Context, log *browserLog, base, step string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 2*time.Second)
	defer cancel()
	result, _ := chromedp.Run(ctx, chromedp.Evaluate[string](resultText))
	log.check(t, tab, base) // names the failed loads: a 404 for the assets, say
	t.Fatalf("%s: %v; the result pane shows %q", step, err, result)
}

// newBrowser starts headless Chromium with a fresh profile, once no other test's runs
// (browsers), and returns its tab, which lives at most browserTimeout, and the log of what the
// tab does. When the test fails, a screenshot of
// the tab is written to the test's temporary directory and its path logged.
func newBrowser(t *testing.T) (context.Context, *browserLog) {
	t.Helper()
	browsers <- struct{}{}
	t.Cleanup(func() { <-browsers }) // last: once Chromium has exited
	profile := t.TempDir()           // removed after Chromium has exited: cleanups run last-in first-out
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(profile),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // Chromium refuses to start as root with its sandbox
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true), // containers often have a tiny /dev/shm
		chromedp.WindowSize(1280, 800),
	}
	deadline, cancelDeadline := context.WithTimeout(context.Background(), browserTimeout)
	alloc, cancelAlloc := chromedp.NewExecAllocator(deadline, opts...)
	log := &browserLog{urls: map[network.RequestID]string{}}
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithListener(log.record), chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for Chromium to exit
		cancelDeadline()
	})
	// The first action starts Chromium, on the tab's own context: the browser lives as long as
	// the context of its first action.
	_, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument,
		page.AddScriptToEvaluateOnNewDocumentParams{Source: recordViolations})
	if err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	t.Cleanup(func() { screenshotOnFailure(t, tab) })
	return tab, log
}

// recordViolations runs before the page's own scripts and keeps every Content-Security-Policy
// violation the page reports.
const recordViolations = `window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline'));
});`

// screenshotOnFailure saves what the tab shows when t has failed, in a directory that outlives
// the test (t.TempDir is removed when the test ends, before anyone could look).
func screenshotOnFailure(t *testing.T, tab context.Context) {
	if !t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	dir, err := os.MkdirTemp("", "petstore-browser-")
	if err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	file := filepath.Join(dir, "playground.png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	t.Logf("screenshot of the page: %s", file)
}

// browserLog records the requests a tab makes, the failed and error answers it gets and the
// exceptions its scripts throw. Chromedp delivers the events on its own goroutine.
type browserLog struct {
	mu       sync.Mutex
	requests []string
	urls     map[network.RequestID]string
	problems []string
}

func (l *browserLog) record(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		l.requests = append(l.requests, ev.Request.URL)
		l.urls[ev.RequestID] = ev.Request.URL
	case *network.EventResponseReceived:
		if ev.Response.Status >= 400 {
			l.problems = append(l.problems, fmt.Sprintf("%d for %s", ev.Response.Status, ev.Response.URL))
		}
	case *network.EventLoadingFailed:
		l.problems = append(l.problems, fmt.Sprintf("%s for %s", ev.ErrorText, l.urls[ev.RequestID]))
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		if d.Exception != nil {
			l.problems = append(l.problems, "the exception "+d.Exception.Description)
		} else {
			l.problems = append(l.problems, "the exception "+d.Text)
		}
	}
}

// check fails t for every request that left base's origin, every failed or error answer, every
// script exception and every Content-Security-Policy violation.
func (l *browserLog) check(t *testing.T, tab context.Context, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 2*time.Second)
	defer cancel()
	violations, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__cspViolations`))
	if err != nil {
		t.Errorf("reading the page's CSP violations: %v", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	origin, _ := url.Parse(base)
	for _, raw := range l.requests {
		u, err := url.Parse(raw)
		local := err == nil && (u.Scheme == "data" || u.Scheme == "blob" ||
			u.Scheme == origin.Scheme && u.Host == origin.Host)
		if !local {
			t.Errorf("the page requested %s; want requests to %s only", raw, base)
		}
	}
	if len(l.requests) == 0 {
		t.Error("recorded no request at all; want the page and its assets")
	}
	for _, p := range l.problems {
		t.Errorf("the page got %s; want none", p)
	}
	for _, v := range violations {
		t.Errorf("the page broke its Content-Security-Policy: %s", v)
	}
	t.Logf("%d requests, all to %s", len(l.requests), base)
}
