package dbtest

import (
	"context"
	"net/url"
	"testing"

	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/faultproxy"
)

// Proxied returns a fresh, migrated MySQL database reached through a fault proxy, so that a
// test can cut and restore the connection while the server keeps running for other tests.
func Proxied(tb testing.TB) (*store.DB, *faultproxy.Proxy) {
	tb.Helper()
	dsn, err := url.Parse(DSN(tb, migrations.MySQL))
	if err != nil {
		tb.Fatal(err)
	}
	proxy := faultproxy.Start(tb, dsn.Host)
	dsn.Host = proxy.Addr()
	db, err := store.Open(context.Background(), dsn.String(), store.DefaultPool)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return db, proxy
}
