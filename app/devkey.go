package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"petstore/auth"
	"petstore/config"
	"petstore/secret"
	"petstore/store"
)

// printDevKey creates and prints a development key of cfg.DevKeyPlan when the database has
// no key at all, with a curl line for the server at base; else how to make one.
func printDevKey(ctx context.Context, db *store.DB, cfg config.Config, base string, stdout io.Writer) error {
	key, err := auth.EnsureDevKey(ctx, db.DB, auth.PrefixFor(cfg.Env), cfg.DevKeyPlan)
	if err != nil {
		return fmt.Errorf("create the development key: %w", err)
	}
	if key == "" {
		fmt.Fprintln(stdout, "development: API keys exist already; make a new one with:", keysCreateLine(cfg))
		return nil
	}
	fmt.Fprintf(stdout, "development API key (%s plan, shown once; PETSTORE_DEV_KEY_PLAN picks another):\n%s\n", cfg.DevKeyPlan, key)
	fmt.Fprintf(stdout, "try: curl -H 'Authorization: Bearer %s' %s/v1/pets\n", key, base)
	return nil
}

// keysCreateLine returns the command that makes a key like the development one, as a user of
// make run types it: with the server's PETSTORE_DB when it is not the default, its password
// masked.
func keysCreateLine(cfg config.Config) string {
	line := "go run . keys create --plan " + cfg.DevKeyPlan
	if cfg.DB == DefaultConfig().DB {
		return line
	}
	db := cfg.DB
	if u, err := secret.ParseURL(db); err == nil {
		if pass, _ := u.User.Password(); pass != "" {
			db = secret.Mask(db)
		}
	}
	return "PETSTORE_DB='" + strings.ReplaceAll(db, "'", `'\''`) + "' " + line
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
