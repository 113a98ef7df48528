package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

func TestRetryPolicy(t *testing.T) {
	deadlock := &mysqldriver.MySQLError{Number: 1213, Message: "Deadlock found"}
	duplicate := &mysqldriver.MySQLError{Number: 1062, Message: "Duplicate entry"}
	for _, tt := range []struct {
		name     string
		errs     []error // what each run returns; nil after the list
		wantRuns int
		wantErr  error
	}{
		{"success", nil, 1, nil},
		{"deadlock then success", []error{deadlock, deadlock}, 3, nil},
		{"deadlock every time", []error{deadlock, deadlock, deadlock, deadlock, deadlock}, store.MaxAttempts, deadlock},
		{"not retryable", []error{duplicate}, 1, duplicate},
		{"lost connection: outcome unknown", []error{mysqldriver.ErrInvalidConn}, 1, mysqldriver.ErrInvalidConn},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runs := 0
			err := store.Retry(context.Background(), func(context.Context) error {
				runs++
				if runs <= len(tt.errs) {
					return tt.errs[runs-1]
				}
				return nil
			})
			if runs != tt.wantRuns || !errors.Is(err, tt.wantErr) {
				t.Errorf("got %d runs, %v; want %d, %v", runs, err, tt.wantRuns, tt.wantErr)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	runs := 0
	_ = store.Retry(ctx, func(context.Context) error { runs++; time.Sleep(2 * time.Millisecond); return deadlock })
	if runs != 1 {
		t.Errorf("past the deadline: got %d runs; want 1", runs)
	}
}

// TestTransactRunsAgainAfterDeadlock makes two transactions lock two rows in opposite orders:
// InnoDB rolls one back with 1213, and Transact runs it again, so both commit.
func TestTransactRunsAgainAfterDeadlock(t *testing.T) {
	db := dbtest.New(t, migrations.MySQL)
	if err := db.Exec("INSERT INTO pets (id, name, category_id) VALUES (1, 'a', 1), (2, 'b', 1)").Error; err != nil {
		t.Fatal(err)
	}
	var (
		barrier sync.WaitGroup
		runs    [2]int
		wg      sync.WaitGroup
		errs    [2]error
	)
	barrier.Add(2)
	for i, order := range [2][2]int{{1, 2}, {2, 1}} {
		wg.Go(func() {
			errs[i] = store.Transact(context.Background(), db.DB, func(tx *gorm.DB) error {
				runs[i]++
				if err := tx.Exec("UPDATE pets SET name = CONCAT(name, 'x') WHERE id = ?", order[0]).Error; err != nil {
					return err
				}
				if runs[i] == 1 {
					barrier.Done()
					barrier.Wait()
				}
				return tx.Exec("UPDATE pets SET name = CONCAT(name, 'y') WHERE id = ?", order[1]).Error
			})
		})
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("Transact: got %v, %v; want both committed", errs[0], errs[1])
	}
	if runs[0]+runs[1] != 3 {
		t.Errorf("runs: got %v; want one of them run twice", runs)
	}
	var names []string
	db.Raw("SELECT name FROM pets ORDER BY id").Scan(&names)
	t.Logf("names %v, runs %v", names, runs)
}

// TestUnavailableServerErrors checks which MySQL server errors are 503 (retry later) and which
// 500: a Galera node outside the primary component (1047), a server shutting down (1053), a
// killed connection (1927) or a refused login (1045) cannot serve for now, whatever the
// statement.
func TestUnavailableServerErrors(t *testing.T) {
	for number, want := range map[uint16]bool{1040: true, 1045: true, 1047: true, 1053: true, 1205: true, 1213: true, 1927: true, 1969: true,
		1062: false, 1064: false, 1146: false} {
		if got := store.Unavailable(&mysqldriver.MySQLError{Number: number}); got != want {
			t.Errorf("Unavailable(MySQL error %d): got %v; want %v", number, got, want)
		}
	}
}
