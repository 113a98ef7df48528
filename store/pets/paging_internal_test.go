package pets

import (
	"context"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/migrations"
	"petstore/models"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestStuckHoleGivesUpOnTheServer checks that a MySQL page whose range holds a pet inserted by
// a transaction that does not end answers 503 once the statement timeout has passed, its
// locking read of the hole (store.Settler) ended by the server, not by InnoDB's lock wait
// timeout (50 s by default) long after the client gave up; and that the page statements
// themselves neither wait for the open insert nor hold it up.
func TestStuckHoleGivesUpOnTheServer(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.DSN(t, migrations.MySQL), store.DefaultPool, store.WithTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	insert := "INSERT INTO pets (name, category_id, status) VALUES ('pet', 1, 'sold')"
	if err := db.Exec(insert).Error; err != nil { // pet 1
		t.Fatal(err)
	}
	tx, err := db.SQL().Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec(insert); err != nil { // pet 2, never committed
		t.Fatal(err)
	}
	if err := db.Exec(insert).Error; err != nil { // pet 3
		t.Fatal(err)
	}
	r := New(db, 200*time.Millisecond, nil)
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // far beyond the bound
	defer cancel()
	_, _, err = r.Page(ctx, 0, models.DefaultPageSize, nil)
	if e := apierr.From(err); e.Code != apierr.Unavailable {
		t.Fatalf("a page past a pet held by an open transaction: got %v; want unavailable", err)
	}
	if took := time.Since(start); took > store.SettleDelay+5*time.Second {
		t.Errorf("the page gave up after %v; want about %v (SettleDelay, then the 200 ms statement timeout)", took, store.SettleDelay)
	}
	pets, _, err := r.page(ctx, db.Statement.ConnPool, false, r.listSQL, 10, 0, nil)
	if err != nil || len(pets) != 2 {
		t.Errorf("a plain page beside the open insert: got %d pets, %v; want pets 1 and 3 at once", len(pets), err)
	}
}

// TestConvertInt checks the integers of drivers other than MySQL's and SQLite's, converted
// as sql.NullInt64 converts them.
func TestConvertInt(t *testing.T) {
	for _, v := range []any{"42", []byte("42"), int32(42), uint8(42)} {
		if n, err := convertInt(nil, 0, v); n != 42 || err != nil {
			t.Errorf("convertInt(%#v): got %d, %v; want 42", v, n, err)
		}
	}
}
