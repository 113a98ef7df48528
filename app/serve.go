package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"petstore/config"
	"petstore/store"
	"petstore/tracing"
)

// Serve runs the HTTP server of cfg until ctx is done, then drains in-flight requests
// (shutdown). It prints the addresses it serves on to stdout. Its listeners are bound first,
// so that a busy port stops the start before any migration or key is made.
func Serve(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	lns, err := bind(cfg)
	if err != nil {
		return err
	}
	// The servers close the listeners; this is for a start that fails before them.
	defer lns.close()
	tr, err := tracing.Start(ctx, cfg.Tracing) // nil when off
	if err != nil {
		return err
	}
	defer tr.Shutdown() // last: after the server and the stores
	db, err := OpenDB(ctx, cfg, tr.StoreOptions()...)
	if err != nil {
		return err
	}
	defer db.Close()
	if len(cfg.Replicas) > 0 {
		if db.Replicas, err = store.OpenReplicas(ctx, db, cfg.Replicas, store.Pool(cfg.Pool)); err != nil {
			return err
		}
	}
	if cfg.Env == "development" {
		if err := printDevKey(ctx, db, cfg, localURL(lns.api.Addr().String()), stdout); err != nil {
			return err
		}
	}
	rdb, err := OpenRedis(ctx, cfg)
	if err != nil {
		return err
	}
	if rdb != nil {
		defer rdb.Close()
	}
	if err := tr.InstrumentRedis(rdb); err != nil {
		return err
	}
	svc, err := New(cfg, db, rdb, tr)
	if err != nil {
		return err
	}
	stop := svc.Background(ctx)
	defer stop() // before db.Close and rdb.Close
	return listen(ctx, cfg, lns, svc, stdout)
}

// listen serves svc on lns.api, and the debug and metrics endpoints on theirs when cfg names
// them, until ctx is done or a server fails.
func listen(ctx context.Context, cfg config.Config, lns listeners, svc *Service, stdout io.Writer) error {
	srv := &http.Server{
		Handler:           svc.Handler,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       cfg.BodyTimeout,
		WriteTimeout:      cfg.BodyTimeout + 10*time.Second, // from the end of the headers: body, handling, answer
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20, // hard cap; rest.MaxHeaderBytes answers smaller floods with an Error body
	}
	errc := make(chan error, 2)
	closeAux := serveAuxiliaries(lns, svc, errc, stdout)
	defer closeAux()
	printBanner(stdout, lns.api.Addr().String())
	go func() { errc <- srv.Serve(lns.api) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return shutdown(srv, svc.drain, cfg, errc)
}

// shutdown stops srv in two steps. For PETSTORE_DRAIN_DELAY the listener still accepts and
// every request is served, but /readyz answers 503 and every answer carries Connection: close:
// a balancer that checks /readyz marks the instance down, and keep-alive clients open their
// next connection elsewhere. Then the subscribers are closed (to resume elsewhere), and
// srv.Shutdown closes the listener and the idle connections and waits up to
// PETSTORE_SHUTDOWN_TIMEOUT for the requests in flight.
func shutdown(srv *http.Server, drain *drainer, cfg config.Config, errc <-chan error) error {
	drain.on.Store(true)
	slog.Info("shutting down: /readyz answers 503, serving on for the drain delay", "drain_delay", cfg.DrainDelay.String())
	select {
	case err := <-errc:
		return err
	case <-time.After(cfg.DrainDelay):
	}
	drain.closeStreams()
	slog.Info("shutting down: draining in-flight requests", "timeout", cfg.ShutdownTimeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// drainer is the state of a shutdown: off until Serve is told to stop.
type drainer struct {
	on           atomic.Bool
	closeStreams func() // closes every subscriber connection once the drain delay is over
}

// Draining reports whether shutdown has begun (rest.Deps.Draining).
func (d *drainer) Draining() bool { return d.on.Load() }

// Middleware asks the client to close its connection after each answer once shutdown has begun
// (Go's server then closes it), so that its next request goes, through its balancer, to
// another instance. Idle connections are left alone until srv.Shutdown: closing one while a
// balancer sends a request on it would lose that request.
func (d *drainer) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.on.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}
