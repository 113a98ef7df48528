package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
	"petstore/testkit/faultproxy"
)

// TestWriteFaultAtEachPoint drops the connection of an idempotent POST at each point of its
// transaction. Before COMMIT is sent the service runs the transaction again itself (201 at
// once); once COMMIT is sent its outcome is unknown, so the answer is 503 naming the
// Idempotency-Key, and the client's retry with that key is safe: in every case exactly one pet.
func TestWriteFaultAtEachPoint(t *testing.T) {
	for _, tt := range []struct {
		name, pattern string
		when          faultproxy.When
		firstCreated  bool // the first answer is 201 (the service retried by itself)
	}{
		{"insert unsent", "INSERT INTO pets", faultproxy.BeforeSend, true},
		{"insert unanswered", "INSERT INTO pets", faultproxy.BeforeReply, true},
		{"record unsent, insert done", "UPDATE `idempotency_keys`", faultproxy.BeforeSend, true},
		{"commit unsent", "COMMIT", faultproxy.BeforeSend, false},
		{"commit unanswered", "COMMIT", faultproxy.BeforeReply, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			quiet(t)
			db, proxy := dbtest.Proxied(t)
			api := newTestAPI(t, db)
			req := post("/v1/pets", `{"name":"Rex","categoryId":1}`)
			req.header = http.Header{"Idempotency-Key": {"fault-" + tt.name}}
			dropped := proxy.DropOn(tt.pattern, tt.when)
			first := api.do(t, req)
			select {
			case <-dropped:
			default:
				t.Fatalf("no connection dropped at %q", tt.pattern)
			}
			if tt.firstCreated {
				if first.status != http.StatusCreated {
					t.Fatalf("first answer: got %d %s; want 201 (retried by the service)", first.status, first.body)
				}
			} else {
				// A COMMIT the driver knows it never sent may be retried at once: 201 then.
				if first.status != http.StatusCreated {
					checkError(t, first, http.StatusServiceUnavailable, apierr.Unavailable, "Idempotency-Key")
				}
				retry := api.do(t, req)
				if retry.status != http.StatusCreated || (first.status == http.StatusCreated && retry.body != first.body) {
					t.Errorf("the client's retry: got %d %s; want 201", retry.status, retry.body)
				}
			}
			if n := countPets(t, api); n != 1 {
				t.Errorf("pets stored: got %d; want exactly 1", n)
			}
		})
	}
}

// TestPlainWriteLostConnection drops the connection under a POST without Idempotency-Key: the
// outcome is unknown to the service, so it answers 503 saying the pet may exist and that an
// Idempotency-Key makes a retry safe; it never stores two pets.
func TestPlainWriteLostConnection(t *testing.T) {
	quiet(t)
	db, proxy := dbtest.Proxied(t)
	api := newTestAPI(t, db)
	dropped := proxy.DropOn("INSERT INTO pets", faultproxy.BeforeReply)
	resp := api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1}`))
	<-dropped
	if resp.status != http.StatusCreated {
		checkError(t, resp, http.StatusServiceUnavailable, apierr.Unavailable, "Idempotency-Key")
	}
	if n := countPets(t, api); n > 1 {
		t.Errorf("pets stored: got %d; want at most 1", n)
	}
}

// TestPlainWriteRetriedAfterLockWaitTimeout holds the end of the pets index in another
// transaction past innodb_lock_wait_timeout (1 s here): the INSERT of a plain POST is rolled
// back with 1205, runs again, and is answered 201 once the lock is gone, within the
// statement timeout.
func TestPlainWriteRetriedAfterLockWaitTimeout(t *testing.T) {
	quiet(t)
	dsn := dbtest.DSN(t, migrations.MySQL)
	migrated, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	defer migrated.Close()
	if _, err := migrated.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	// One connection, so that the session's lock wait timeout holds for every statement.
	db, err := store.Open(context.Background(), dsn, store.Pool{MaxOpen: 1, MaxIdle: 1, MaxLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Exec("SET SESSION innodb_lock_wait_timeout = 1").Error; err != nil {
		t.Fatal(err)
	}
	api := newTestAPI(t, db)
	blocker := migrated.Begin()
	var ids []int64
	if err := blocker.Raw("SELECT id FROM pets WHERE id > 0 FOR UPDATE").Scan(&ids).Error; err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(1500 * time.Millisecond)
		blocker.Commit()
		close(released)
	}()
	start := time.Now()
	resp := api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1}`))
	<-released
	if resp.status != http.StatusCreated {
		t.Fatalf("POST behind a lock held 1.5 s: got %d %s; want 201 (retried after 1205)", resp.status, strings.TrimSpace(resp.body))
	}
	t.Logf("answered 201 after %v", time.Since(start))
}
