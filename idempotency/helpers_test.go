package idempotency

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
	"petstore/models"
	"petstore/store"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// fixture is Records over a fresh database, in front of a handler that creates pets.
type fixture struct {
	db    *store.DB
	clock *fakeClock
	s     *Records
	h     http.Handler
	hits  atomic.Int64 // how many times the handler ran
	fail  atomic.Value // once, after writing a pet: "500", "panic", "steal" (delete the record) or "kill" (the connection, MySQL)
	block chan struct{}
	start chan struct{}
	once  atomic.Bool // block only the first request
}

// newFixture returns a fixture over db; edit tunes the configuration.
func newFixture(t *testing.T, db *store.DB, edit func(*Config)) *fixture {
	t.Helper()
	f := &fixture{db: db, clock: newFakeClock()}
	f.fail.Store("")
	cfg := DefaultConfig()
	cfg.Now = f.clock.Now
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(db.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.Use(gin.CustomRecoveryWithWriter(nil, func(c *gin.Context, _ any) {
		apierr.Write(c.Writer, c.Request, apierr.Wrap(nil))
		c.Abort()
	}))
	r.POST("/pets", principal, s.Middleware, f.createPet)
	f.h = r
	return f
}

// blockFirst makes the first request's handler wait, after writing its pet, until release
// is closed; started is closed when it waits.
func (f *fixture) blockFirst() (started, release chan struct{}) {
	f.start, f.block = make(chan struct{}), make(chan struct{})
	return f.start, f.block
}

// principal authenticates every request as the API key id in X-Key-ID (1 when absent).
func principal(c *gin.Context) {
	id, err := strconv.ParseInt(c.GetHeader("X-Key-ID"), 10, 64)
	if err != nil {
		id = 1
	}
	c.Request = c.Request.WithContext(auth.NewContext(c.Request.Context(), &auth.Principal{KeyID: id}))
}

// createPet stores the pet of the body in the request's transaction and answers 201, or 400
// for a blank name.
func (f *fixture) createPet(c *gin.Context) {
	f.hits.Add(1)
	var in models.NewPet
	if err := json.NewDecoder(c.Request.Body).Decode(&in); err != nil || in.Validate() != nil {
		apierr.Write(c.Writer, c.Request, apierr.Invalid("name is required"))
		return
	}
	pet := in.Pet()
	if err := store.Conn(c.Request.Context(), f.db.DB).Create(&pet).Error; err != nil {
		apierr.Write(c.Writer, c.Request, apierr.Wrap(err))
		return
	}
	if f.block != nil && f.once.CompareAndSwap(false, true) {
		close(f.start)
		<-f.block
	}
	if f.failOnce(c) {
		return
	}
	c.Header("Location", "/v1/pets/"+strconv.FormatInt(pet.ID, 10))
	c.JSON(http.StatusCreated, pet)
}

// failOnce fails the request as f.fail says, once, and reports whether it answered.
func (f *fixture) failOnce(c *gin.Context) bool {
	conn := store.Conn(c.Request.Context(), f.db.DB)
	switch f.fail.Swap("") {
	case "500":
		apierr.Write(c.Writer, c.Request, apierr.Wrap(nil))
		return true
	case "panic":
		panic("handler failed")
	case "steal":
		if err := conn.Exec("DELETE FROM idempotency_keys").Error; err != nil {
			panic(err)
		}
	case "kill":
		var id int64
		if err := conn.Raw("SELECT CONNECTION_ID()").Scan(&id).Error; err != nil {
			panic(err)
		}
		_ = conn.Exec("KILL ?", id).Error // the transaction dies with its connection
		for range 100 {                   // KILL may take effect a moment later: wait until it has
			if conn.Exec("DO 1").Error != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	return false
}

// call is one request to the fixture.
type call struct {
	keyID  int64  // API key id; 1 when 0
	key    string // Idempotency-Key; none when ""
	body   string
	header http.Header // set after the defaults
}

func (f *fixture) send(t *testing.T, cl call) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/pets", strings.NewReader(cl.body))
	r.Header.Set("Content-Type", "application/json")
	if cl.keyID != 0 {
		r.Header.Set("X-Key-ID", strconv.FormatInt(cl.keyID, 10))
	}
	if cl.key != "" {
		r.Header.Set(HeaderKey, cl.key)
	}
	for k, vs := range cl.header {
		r.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, r)
	return rec
}

// count returns the rows of table.
func (f *fixture) count(t *testing.T, table string) int64 {
	t.Helper()
	var n int64
	if err := f.db.Table(table).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// find returns the record of key under API key 1.
func (f *fixture) find(t *testing.T, key string) *record {
	t.Helper()
	rec, err := f.s.find(context.Background(), scope{keyID: 1, key: key})
	if err != nil {
		t.Fatalf("record %q: %v", key, err)
	}
	return rec
}

// claimElsewhere commits an in_flight record of key and body under API key 1, as another
// instance that is running the request would.
func (f *fixture) claimElsewhere(t *testing.T, key, body string) {
	t.Helper()
	cl := &claim{scope: scope{keyID: 1, key: key, hash: fingerprint(http.MethodPost, "/pets", []byte(body))}, token: newToken()}
	if err := f.s.insert(context.Background(), cl, f.s.now()); err != nil {
		t.Fatal(err)
	}
}

// wantStatus fails t unless rec answered status.
func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status: got %d; want %d (body %s)", rec.Code, status, rec.Body)
	}
}

// wantError fails t unless rec is an Error body with status and code whose message names word.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code apierr.Code, word string) {
	t.Helper()
	wantStatus(t, rec, status)
	var e apierr.Body
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("body %q is not an Error: %v", rec.Body, err)
	}
	if e.Code != code || e.Status != status || !strings.Contains(e.Message, word) {
		t.Errorf("error: got %+v; want code %s status %d naming %q", e, code, status, word)
	}
}

// wantReplay fails t unless got repeats first, marked as a replay.
func wantReplay(t *testing.T, got, first *httptest.ResponseRecorder) {
	t.Helper()
	if got.Code != first.Code || got.Body.String() != first.Body.String() {
		t.Errorf("replay: got %d %s; want %d %s", got.Code, got.Body, first.Code, first.Body)
	}
	for _, h := range []string{"Content-Type", "Location"} {
		if g, w := got.Header().Get(h), first.Header().Get(h); g != w {
			t.Errorf("replay %s: got %q; want %q", h, g, w)
		}
	}
	if g := got.Header().Get(HeaderReplayed); g != "true" {
		t.Errorf("%s: got %q; want true", HeaderReplayed, g)
	}
}
