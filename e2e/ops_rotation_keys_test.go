package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"petstore/app"
	"petstore/auth"
	"petstore/live"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// schedulingSlack is what a bound of the docs is given on top in a test, for a machine that
// other tests load: a goroutine or process scheduled late, a poll's own interval.
const schedulingSlack = time.Second

// petstoreCmd runs the petstore command line (this test binary acting as it) with args, as a
// process of its own whose environment is env alone, and returns its stdout; a failure fails t
// with its stderr.
func petstoreCmd(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := petstoreCmdErr(env, args...)
	if err != nil {
		t.Fatalf("petstore %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// petstoreCmdErr is petstoreCmd returning the failure, with the process's stderr in it; a
// process still running after a minute is killed.
func petstoreCmdErr(env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(env, "PETSTORE_TEST_AS_BINARY=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, stderr.Bytes())
	}
	return stdout.String(), nil
}

// createdKey returns the id and the key that `keys create` printed in out.
func createdKey(t *testing.T, out string) (id, key string) {
	t.Helper()
	if _, err := fmt.Sscanf(out, "created API key %s", &id); err != nil {
		t.Fatalf("keys create printed %q", out)
	}
	return id, lastLine(out)
}

// rotationClient sends GET /v1/pets every 10 ms, in turn to each instance, with the key it is
// given, and records every answer that is not a 200.
type rotationClient struct {
	key      atomic.Pointer[string]
	mu       sync.Mutex
	sent     int
	failures []string
	stop     chan struct{}
	done     chan struct{}
}

func startRotationClient(urls []string, key string) *rotationClient {
	c := &rotationClient{stop: make(chan struct{}), done: make(chan struct{})}
	c.key.Store(&key)
	go func() {
		defer close(c.done)
		for i := 0; ; i++ {
			select {
			case <-c.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			key := *c.key.Load()
			status := getWithKey(urls[i%len(urls)], key)
			c.mu.Lock()
			c.sent++
			if status != http.StatusOK {
				c.failures = append(c.failures, fmt.Sprintf("instance %d, key %s...: %d", i%len(urls), key[:18], status))
			}
			c.mu.Unlock()
		}
	}()
	return c
}

// end stops the client and returns how many requests it sent and those that failed.
func (c *rotationClient) end() (int, []string) {
	close(c.stop)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent, c.failures
}

// getWithKey returns the status of GET /v1/pets at base with key (0 when it got no answer).
func getWithKey(base, key string) int {
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/pets?limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// rotationPlan is the keys create command line of the keys rotated: limits that the client's
// requests, some 100 a second, stay far from.
var rotationPlan = []string{"keys", "create", "--plan", "enterprise", "--per-minute", "100000", "--per-day", "10000000"}

// TestKeyRotation walks the rotation of an API key that docs/operations.md describes, on two
// instances sharing one MySQL database and Redis, with the keys commands run as processes of
// their own: `keys create` makes key B while a client calls both instances with key A, which
// holds a WebSocket and an SSE subscription on each; the client moves to B and opens B's
// subscriptions; `keys revoke` revokes A. No request of the client fails at any point; A is
// refused (401) by both instances within PETSTORE_KEY_CACHE_TTL of the revocation (the
// default, auth.DefaultCacheTTL), each of A's WebSockets is closed with 4403 and each of its
// streams ends with an UNAUTHORIZED event within a few seconds (live's recheck, every 2 s),
// while B's subscriptions stay open and get the next pet.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	dsn := dbtest.DSN(t, "mysql")
	cfg := app.DefaultConfig()
	cfg.RedisURL = dbtest.RedisURL()
	_, cfg.RedisKeyPrefix = dbtest.Redis(t)
	env := []string{"PETSTORE_DB=" + dsn}
	idA, keyA := createdKey(t, petstoreCmd(t, env, append(rotationPlan, "--name", "rotation A")...))
	db, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	insts := sharedInstances(t, db, cfg, 2)
	urls := []string{insts[0].url, insts[1].url}

	client := startRotationClient(urls, keyA)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var oldWS []*wsClient
	var oldSSE []<-chan string
	for _, s := range insts {
		w := s.connect(t, keyA)
		w.subscribe("1", "")
		oldWS = append(oldWS, w)
		oldSSE = append(oldSSE, sseEvents(s.sseStream(t, ctx, keyA, "").Body))
	}

	_, keyB := createdKey(t, petstoreCmd(t, env, append(rotationPlan, "--name", "rotation B")...))
	client.key.Store(&keyB)
	newWS := insts[0].connect(t, keyB)
	newWS.subscribe("1", "")
	newSSE := sseEvents(insts[1].sseStream(t, ctx, keyB, "").Body)
	for _, s := range insts {
		s.waitActive(t, 3)
	}
	time.Sleep(time.Second) // the client calls both instances with B for a while

	// Each of A's subscriptions, on its own goroutine, reports how it ended and when.
	type end struct {
		what string
		at   time.Time
	}
	ends := make(chan end, len(oldWS)+len(oldSSE))
	for i, w := range oldWS {
		go func() { ends <- end{fmt.Sprintf("instance %d, WebSocket: %s", i, wsEnd(w)), time.Now()} }()
	}
	for i, events := range oldSSE {
		go func() { ends <- end{fmt.Sprintf("instance %d, stream: %s", i, sseEnd(events)), time.Now()} }()
	}
	if out := petstoreCmd(t, env, "keys", "revoke", idA); !strings.Contains(out, "within "+auth.DefaultCacheTTL.String()) {
		t.Errorf("keys revoke printed %q; want the time within which servers refuse the key", out)
	}
	revoked := time.Now() // the revocation committed before the command exited
	for range len(oldWS) + len(oldSSE) {
		select {
		case e := <-ends:
			forbidden := fmt.Sprintf("close %d ", live.CloseForbidden)
			if !strings.Contains(e.what, "revoked") || !strings.Contains(e.what, forbidden) && !strings.Contains(e.what, "UNAUTHORIZED") {
				t.Errorf("A's subscription, %s; want close %d or an UNAUTHORIZED event, saying revoked", e.what, live.CloseForbidden)
			}
			if d := e.at.Sub(revoked); d > revokedCutOff+schedulingSlack {
				t.Errorf("A's subscription, %s, ended %v after the revocation; want within %v", e.what, d, revokedCutOff)
			}
			t.Logf("%v after the revocation: %s", e.at.Sub(revoked).Round(time.Millisecond), e.what)
		case <-time.After(revokedCutOff + schedulingSlack - time.Since(revoked)):
			t.Fatalf("A's subscriptions still open %v after the revocation", revokedCutOff+schedulingSlack)
		}
	}
	for i, u := range urls {
		within(t, auth.DefaultCacheTTL+schedulingSlack-time.Since(revoked), fmt.Sprintf("instance %d refuses the revoked key", i), func() bool {
			return getWithKey(u, keyA) == http.StatusUnauthorized
		})
		t.Logf("instance %d refuses A %v after the revocation", i, time.Since(revoked).Round(time.Millisecond))
	}

	id := insts[1].createPet(t, keyB, "after the rotation", "")
	if got := newWS.next("1").Pet.ID; got != fmt.Sprint(id) {
		t.Errorf("B's WebSocket: got pet %s; want %d", got, id)
	}
	if e := nextPet(t, newSSE); !strings.HasPrefix(e, "next ") || !strings.Contains(e, fmt.Sprintf(`"id":"%d"`, id)) {
		t.Errorf("B's stream: %q; want the pet %d", e, id)
	}
	sent, failures := client.end()
	t.Logf("the client sent %d requests through the rotation", sent)
	for _, f := range failures {
		t.Errorf("a request of the client failed: %s", f)
	}
}

// revokedCutOff is how soon a revoked key's subscriptions end, as docs/subscriptions.md says
// ("within a few seconds"): live checks the keys of open connections every 2 s.
const revokedCutOff = 5 * time.Second

// wsEnd reads w until the server closes it and describes the close: "CODE REASON", or the
// error that ended it otherwise. It never fails the test, so that it may run on a goroutine.
func wsEnd(w *wsClient) string {
	for {
		_, err := w.readErr(time.Minute)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if asCloseError(err, &ce) {
			return fmt.Sprintf("close %d %q", ce.Code, ce.Reason)
		}
		return err.Error()
	}
}

// sseEnd reads events until one that carries no pet and is no ping, which it returns ("" when
// the stream ended first).
func sseEnd(events <-chan string) string {
	for e := range events {
		if !strings.Contains(e, `"petAdded"`) && e != ": ping" {
			return e
		}
	}
	return ""
}
