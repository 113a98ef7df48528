package idempotency

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/internal/jsonbody"
	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

const rex = `{"name":"Rex","categoryId":1}`

func TestKeyHeader(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		for _, tt := range []struct {
			name   string
			values []string
			status int
		}{
			{"empty", []string{""}, 400},
			{"256 characters", []string{strings.Repeat("k", 256)}, 400},
			{"non-ASCII", []string{"clé"}, 400},
			{"tab", []string{"a\tb"}, 400},
			{"DEL", []string{"a\x7fb"}, 400},
			{"sent twice", []string{"a", "b"}, 400},
			{"sent twice alike", []string{"a", "a"}, 400},
			{"255 characters", []string{strings.Repeat("k", 255)}, 201},
			{"one character", []string{"k"}, 201},
			{"spaces and symbols", []string{`"quoted" key, with ~!@#$%^&*()`}, 201},
			{"UUID", []string{"8e03978e-40d5-43e8-bc93-6894a57f9324"}, 201},
		} {
			t.Run(tt.name, func(t *testing.T) {
				rec := f.send(t, call{body: rex, header: http.Header{HeaderKey: tt.values}})
				if tt.status == 400 {
					wantError(t, rec, 400, apierr.InvalidRequest, HeaderKey)
					return
				}
				wantStatus(t, rec, tt.status)
			})
		}
		if got, want := f.count(t, "idempotency_keys"), int64(4); got != want {
			t.Errorf("records: got %d; want %d (one per valid key)", got, want)
		}
	})
}

func TestNoKeyPassesThrough(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		for range 2 {
			rec := f.send(t, call{body: rex})
			wantStatus(t, rec, http.StatusCreated)
			if got := rec.Header().Get(HeaderReplayed); got != "" {
				t.Errorf("%s: got %q; want none", HeaderReplayed, got)
			}
		}
		if got := f.count(t, "pets"); got != 2 {
			t.Errorf("pets: got %d; want 2", got)
		}
		if got := f.count(t, "idempotency_keys"); got != 0 {
			t.Errorf("records: got %d; want 0", got)
		}
	})
}

func TestReplay(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		first := f.send(t, call{key: "k1", body: rex})
		wantStatus(t, first, http.StatusCreated)
		if got := first.Header().Get(HeaderReplayed); got != "" {
			t.Errorf("first answer %s: got %q; want none", HeaderReplayed, got)
		}
		if first.Header().Get("Location") == "" || !strings.Contains(first.Body.String(), `"name":"Rex"`) {
			t.Fatalf("first answer: got %v %s; want a Location and the pet", first.Header(), first.Body)
		}
		for range 3 {
			wantReplay(t, f.send(t, call{key: "k1", body: rex}), first)
		}
		if got := f.hits.Load(); got != 1 {
			t.Errorf("handler runs: got %d; want 1", got)
		}
		if got := f.count(t, "pets"); got != 1 {
			t.Errorf("pets: got %d; want 1", got)
		}
	})
}

func TestReplayOfClientError(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		body := `{"name":" ","categoryId":1}`
		first := f.send(t, call{key: "bad", body: body})
		wantError(t, first, 400, apierr.InvalidRequest, "name")
		wantReplay(t, f.send(t, call{key: "bad", body: body}), first)
		if got := f.hits.Load(); got != 1 {
			t.Errorf("handler runs: got %d; want 1", got)
		}
	})
}

func TestReusedKey(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		wantStatus(t, f.send(t, call{key: "k", body: rex}), http.StatusCreated)
		for _, tt := range []struct{ name, body string }{
			{"other pet", `{"name":"Tom","categoryId":1}`},
			{"same JSON, other spacing", `{"name": "Rex", "categoryId": 1}`},
			{"empty body", ``},
		} {
			t.Run(tt.name, func(t *testing.T) {
				wantError(t, f.send(t, call{key: "k", body: tt.body}), 422, apierr.IdempotencyKeyReused, HeaderKey)
			})
		}
		if got := f.count(t, "pets"); got != 1 {
			t.Errorf("pets: got %d; want 1", got)
		}
	})
}

func TestFailuresNotRecorded(t *testing.T) {
	for _, failure := range []string{"500", "panic"} {
		t.Run(failure, func(t *testing.T) {
			dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
				f := newFixture(t, db, nil)
				f.fail.Store(failure)
				wantError(t, f.send(t, call{key: "k", body: rex}), 500, apierr.Internal, "internal")
				if got := f.count(t, "idempotency_keys"); got != 0 {
					t.Errorf("records after a %s: got %d; want 0", failure, got)
				}
				if got := f.count(t, "pets"); got != 0 {
					t.Errorf("pets after a %s: got %d; want 0 (rolled back)", failure, got)
				}
				retry := f.send(t, call{key: "k", body: rex})
				wantStatus(t, retry, http.StatusCreated)
				if got := retry.Header().Get(HeaderReplayed); got != "" {
					t.Errorf("retry %s: got %q; want none (a new run)", HeaderReplayed, got)
				}
				if got := f.count(t, "pets"); got != 1 {
					t.Errorf("pets: got %d; want 1", got)
				}
			})
		})
	}
}

func TestExpiry(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		first := f.send(t, call{key: "k", body: rex})
		wantStatus(t, first, http.StatusCreated)
		f.clock.Advance(24*time.Hour - time.Second)
		wantReplay(t, f.send(t, call{key: "k", body: rex}), first)
		f.clock.Advance(time.Second)
		// Expired, not yet purged: the key is new again, whatever the body.
		again := f.send(t, call{key: "k", body: `{"name":"Tom","categoryId":2}`})
		wantStatus(t, again, http.StatusCreated)
		if got := again.Header().Get(HeaderReplayed); got != "" {
			t.Errorf("after expiry %s: got %q; want none", HeaderReplayed, got)
		}
		wantReplay(t, f.send(t, call{key: "k", body: `{"name":"Tom","categoryId":2}`}), again)
		if got := f.count(t, "pets"); got != 2 {
			t.Errorf("pets: got %d; want 2", got)
		}
	})
}

func TestScopePerAPIKey(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		first := f.send(t, call{keyID: 1, key: "k", body: rex})
		other := f.send(t, call{keyID: 2, key: "k", body: rex})
		wantStatus(t, first, http.StatusCreated)
		wantStatus(t, other, http.StatusCreated)
		if got := other.Header().Get(HeaderReplayed); got != "" || other.Body.String() == first.Body.String() {
			t.Errorf("other API key: got %s (%s %q); want a pet of its own", other.Body, HeaderReplayed, got)
		}
		wantReplay(t, f.send(t, call{keyID: 1, key: "k", body: rex}), first)
		wantReplay(t, f.send(t, call{keyID: 2, key: "k", body: rex}), other)
		if got := f.count(t, "idempotency_keys"); got != 2 {
			t.Errorf("records: got %d; want 2", got)
		}
	})
}

func TestKeysAreCaseSensitive(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		for _, key := range []string{"abc", "ABC", "abc "} {
			rec := f.send(t, call{key: key, body: rex})
			wantStatus(t, rec, http.StatusCreated)
			if got := rec.Header().Get(HeaderReplayed); got != "" {
				t.Errorf("key %q: replayed; want a record of its own", key)
			}
		}
	})
}

func TestBodyLimit(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		fits := rex + strings.Repeat(" ", jsonbody.MaxBytes-len(rex))
		wantStatus(t, f.send(t, call{key: "fits", body: fits}), http.StatusCreated)
		wantError(t, f.send(t, call{key: "big", body: fits + " "}), 413, apierr.PayloadTooLarge, "body")
		if got := f.count(t, "idempotency_keys"); got != 1 {
			t.Errorf("records: got %d; want 1", got)
		}
	})
}

func TestNewValidates(t *testing.T) {
	db := dbtest.New(t, migrations.SQLite)
	for _, tt := range []struct {
		name string
		edit func(*Config)
	}{
		{"TTL under 24 hours", func(c *Config) { c.TTL = 23 * time.Hour }},
		{"no lease", func(c *Config) { c.Lease = 0 }},
		{"lease as long as the TTL", func(c *Config) { c.Lease = c.TTL }},
		{"no query timeout", func(c *Config) { c.QueryTimeout = 0 }},
		{"no purge batch", func(c *Config) { c.PurgeBatch = 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.edit(&cfg)
			if _, err := New(db.DB, cfg); err == nil {
				t.Errorf("New: got nil error; want one")
			}
		})
	}
	if _, err := New(db.DB, DefaultConfig()); err != nil {
		t.Errorf("New with the defaults: got %v; want nil", err)
	}
}

// TestExpiryBoundary checks the expiry to the microsecond from clocks with sub-second parts:
// SQLite compares the stored times as text.
func TestExpiryBoundary(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		for _, frac := range []time.Duration{0, 100 * time.Millisecond, 123456 * time.Microsecond, 999999 * time.Microsecond} {
			t.Run(frac.String(), func(t *testing.T) {
				f := newFixture(t, db, nil)
				f.clock.Advance(frac)
				key := "k" + frac.String()
				first := f.send(t, call{key: key, body: rex})
				wantStatus(t, first, http.StatusCreated)
				f.clock.Advance(24*time.Hour - time.Microsecond)
				wantReplay(t, f.send(t, call{key: key, body: rex}), first)
				f.clock.Advance(time.Microsecond)
				if got := f.send(t, call{key: key, body: rex}); got.Header().Get(HeaderReplayed) != "" {
					t.Errorf("at expiry: got a replay; want a new run")
				}
			})
		}
	})
}

// TestAnswerNotRecorded loses the record inside the handler's transaction: the answer cannot
// be recorded, so nothing is stored and a retry runs again. (A connection lost there is
// retried by the service itself: TestLostConnectionBeforeCommitRunsAgain.)
func TestAnswerNotRecorded(t *testing.T) {
	for _, tt := range []struct {
		failure string
		status  int
		code    apierr.Code
		mysql   bool
	}{
		{"steal", 409, apierr.IdempotencyKeyInUse, false},
	} {
		t.Run(tt.failure, func(t *testing.T) {
			dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
				if tt.mysql && db.Dialect != migrations.MySQL {
					t.Skip("MySQL only: KILL")
				}
				f := newFixture(t, db, nil)
				f.fail.Store(tt.failure)
				wantError(t, f.send(t, call{key: "k", body: rex}), tt.status, tt.code, HeaderKey)
				if got := f.count(t, "pets"); got != 0 {
					t.Errorf("pets: got %d; want 0 (rolled back)", got)
				}
				if got := f.count(t, "idempotency_keys"); got != 0 {
					t.Errorf("records: got %d; want 0 (released)", got)
				}
				retry := f.send(t, call{key: "k", body: rex})
				wantStatus(t, retry, http.StatusCreated)
				if got := f.count(t, "pets"); got != 1 {
					t.Errorf("pets: got %d; want 1", got)
				}
			})
		})
	}
}
