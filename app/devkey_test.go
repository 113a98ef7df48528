package app

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"petstore/models"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestDevKeyCreatedOnce starts six development instances at once on a fresh database of each
// dialect: one prints the key, the others say that keys exist, and the database holds one key.
func TestDevKeyCreatedOnce(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DB = dbtest.DSN(t, dialect)
			outs := make([]bytes.Buffer, 6)
			dbs := make([]*store.DB, len(outs))
			for i := range dbs { // migrated first, so that the key's creations meet
				db, err := OpenDB(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				dbs[i] = db
			}
			var wg sync.WaitGroup
			for i := range outs {
				wg.Go(func() {
					if err := printDevKey(context.Background(), dbs[i], cfg, "http://localhost:8080", &outs[i]); err != nil {
						t.Errorf("instance %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			printed := 0
			for i := range outs {
				if strings.Contains(outs[i].String(), "development API key") {
					printed++
				}
			}
			check, err := store.Open(context.Background(), cfg.DB, store.DefaultPool)
			if err != nil {
				t.Fatal(err)
			}
			defer check.Close()
			var keys int64
			if err := check.Model(&models.APIKey{}).Count(&keys).Error; err != nil {
				t.Fatal(err)
			}
			if printed != 1 || keys != 1 {
				t.Errorf("got %d keys printed and %d stored; want 1 and 1", printed, keys)
			}
		})
	}
}

// TestLocalURL: the development key's curl hint names a URL that reaches the server, whatever
// form PETSTORE_ADDR takes.
func TestLocalURL(t *testing.T) {
	for addr, want := range map[string]string{
		":8080":          "http://localhost:8080",
		"0.0.0.0:8080":   "http://localhost:8080",
		"[::]:8080":      "http://localhost:8080",
		"127.0.0.1:9000": "http://127.0.0.1:9000",
		"[::1]:8080":     "http://[::1]:8080",
		"petstore:80":    "http://petstore:80",
	} {
		if got := localURL(addr); got != want {
			t.Errorf("localURL(%q) = %q; want %q", addr, got, want)
		}
	}
}
