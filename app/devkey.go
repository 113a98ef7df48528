package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"

	"petstore/auth"
	"petstore/config"
	"petstore/store"
)

// printDevKey creates and prints a development key when the database has no key at all, with
// a curl line for the server at base.
func printDevKey(ctx context.Context, db *store.DB, cfg config.Config, base string, stdout io.Writer) error {
	key, err := auth.EnsureDevKey(ctx, db.DB, cfg.KeyPrefix())
	if err != nil {
		return fmt.Errorf("create the development key: %w", err)
	}
	if key == "" {
		fmt.Fprintln(stdout, "development: API keys exist already; make a new one with: petstore keys create --plan free")
		return nil
	}
	fmt.Fprintf(stdout, "development API key (free plan, shown once):\n%s\n", key)
	fmt.Fprintf(stdout, "try: curl -H 'Authorization: Bearer %s' %s/v1/pets\n", key, base)
	return nil
}

// localURL returns the URL at which this machine reaches a server listening on addr: ":8080"
// and "0.0.0.0:8080" give http://localhost:8080, "[::1]:8080" gives http://[::1]:8080.
func localURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
