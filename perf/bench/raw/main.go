// Command raw is the ceiling of the benchmark: the three REST endpoints of the pet store on
// net/http and database/sql alone, with statements prepared once at start, JSON written by
// hand into pooled buffers, and the service's bearer check (auth.Authenticator, whose lookups
// are cached); no rate limiter. It is honest (the contract's validation and Error bodies) and
// as fast as this stack goes: the practical ceiling for the service.
//
//	go run ./bench/raw -addr 127.0.0.1:8082 -db mysql://root:@127.0.0.1:3306/petstore_bench
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"petstore/auth"
	"petstore/perf/bench/internal/benchsrv"
	"petstore/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "raw:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := benchsrv.ParseFlags("raw", args, stderr)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, f.DB, store.DefaultPool)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return err
	}
	s, err := newServer(ctx, db.SQL(), auth.NewAuthenticator(db.DB, nil, f.KeyPrefix, 0, 0))
	if err != nil {
		return err
	}
	defer s.close()
	return benchsrv.Serve(ctx, "raw", f.Addr, s.routes(), stdout)
}

// server holds the prepared statements and the key check.
type server struct {
	authn      *auth.Authenticator
	list       *sql.Stmt // all pets by id
	listStatus *sql.Stmt // pets of one status by id
	get        *sql.Stmt // one pet
	insert     *sql.Stmt // a new pet
}

// The statements, in the syntax both MySQL and SQLite read.
const (
	listSQL       = "SELECT id, name, category_id, status FROM pets ORDER BY id LIMIT ?"
	listStatusSQL = "SELECT id, name, category_id, status FROM pets WHERE status = ? ORDER BY id LIMIT ?"
	getSQL        = "SELECT id, name, category_id, status FROM pets WHERE id = ?"
	insertSQL     = "INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)"
)

// newServer prepares every statement on db once.
func newServer(ctx context.Context, db *sql.DB, authn *auth.Authenticator) (*server, error) {
	s := &server{authn: authn}
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&s.list, listSQL}, {&s.listStatus, listStatusSQL}, {&s.get, getSQL}, {&s.insert, insertSQL}} {
		stmt, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.stmt = stmt
	}
	return s, nil
}

func (s *server) close() {
	for _, st := range []*sql.Stmt{s.list, s.listStatus, s.get, s.insert} {
		if st != nil {
			_ = st.Close()
		}
	}
}

// routes returns the handler of /healthz and the three /v1 routes.
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /v1/pets", s.authorized(s.listPets))
	mux.HandleFunc("POST /v1/pets", s.authorized(s.createPet))
	mux.HandleFunc("GET /v1/pets/{petId}", s.authorized(s.getPet))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such resource")
	})
	return mux
}

// authorized runs next only for a request with a valid key; others get the service's 401 (or
// 503 when the key table cannot be read).
func (s *server) authorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.authn.Authenticate(r.Context(), r.Header.Get("Authorization")); err != nil {
			writeAuthError(w, err)
			return
		}
		next(w, r)
	}
}
