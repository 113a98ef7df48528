// Package benchsrv holds what the two comparison servers of the benchmark share: their
// command line and an HTTP server that drains on SIGINT/SIGTERM.
package benchsrv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"petstore/auth"
)

// Flags are the settings of a comparison server.
type Flags struct {
	Addr      string // listen address
	DB        string // sqlite:PATH or mysql://USER:PASS@HOST:PORT/DBNAME, as PETSTORE_DB
	KeyPrefix string // the prefix of the keys accepted (the service's development keys by default)
}

// ParseFlags parses the command line of the server name.
func ParseFlags(name string, args []string, stderr io.Writer) (Flags, error) {
	var f Flags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:8081", "listen address")
	fs.StringVar(&f.DB, "db", "sqlite:petstore.db", "database: sqlite:PATH or mysql://USER:PASS@HOST:PORT/DBNAME")
	fs.StringVar(&f.KeyPrefix, "key-prefix", auth.TestPrefix, "prefix of the API keys accepted")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return f, nil
}

// Serve serves h on addr until ctx is done, then drains in-flight requests for up to 10 s.
func Serve(ctx context.Context, name, addr string, h http.Handler, stdout io.Writer) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s listening on http://%s\n", name, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
