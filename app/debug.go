package app

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"sync"
	"time"

	"petstore/config"
	"petstore/rest"
)

// serveAuxiliaries serves the profiling endpoints (PETSTORE_DEBUG_ADDR) and the metrics
// (PETSTORE_METRICS_ADDR) on listeners of their own when cfg names them, and returns the
// function that closes them; a failure of their servers is sent to errc.
func serveAuxiliaries(cfg config.Config, svc *Service, errc chan<- error, stdout io.Writer) (closeAll func(), err error) {
	var servers []*http.Server
	closeAll = func() {
		for _, s := range servers {
			_ = s.Close()
		}
	}
	profileHeap(cfg.DebugAddr != "")
	if cfg.DebugAddr != "" {
		debug, err := serveDebug(cfg.DebugAddr, errc)
		if err != nil {
			return closeAll, err
		}
		servers = append(servers, debug)
		fmt.Fprintf(stdout, "profiling endpoints on http://%s/debug/pprof/\n", debug.Addr)
	}
	if cfg.MetricsAddr != "" {
		metrics, err := serveMetrics(cfg.MetricsAddr, svc.Metrics, errc)
		if err != nil {
			closeAll()
			return closeAll, err
		}
		servers = append(servers, metrics)
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", metrics.Addr)
	}
	return closeAll, nil
}

// profileHeap turns the sampling of allocations for heap profiles on (at the rate the process
// started with) or off. Only the profiling endpoints read the samples, and each costs a stack
// walk and a record kept for the life of the process: 0.5% of a request's instructions and
// 1.4 MiB of resident memory under make bench's mixed load.
func profileHeap(on bool) {
	rate := 0
	if on {
		rate = goMemProfileRate
	}
	heapProfiling.Lock()
	defer heapProfiling.Unlock()
	runtime.MemProfileRate = rate
}

var (
	heapProfiling    sync.Mutex // serialises the writes of runtime.MemProfileRate (tests serve in one process)
	goMemProfileRate = runtime.MemProfileRate
)

// serveDebug serves net/http/pprof's endpoints on their own listener at addr, away from the
// API's router, middleware and limits; a failure of its server is sent to errc.
func serveDebug(addr string, errc chan<- error) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serveAux("debug", addr, mux, errc)
}

// serveMetrics serves h, the Prometheus handler, at /metrics on a listener of its own at addr
// (PETSTORE_METRICS_ADDR), and nothing else.
func serveMetrics(addr string, h http.Handler, errc chan<- error) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return serveAux("metrics", addr, mux, errc)
}

// serveAux serves h on a listener of its own at addr, named name in errors sent to errc.
func serveAux(name, addr string, h http.Handler, errc chan<- error) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listener: %w", name, err)
	}
	srv := &http.Server{Addr: ln.Addr().String(), Handler: rest.NoSniff(h), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("%s listener: %w", name, err)
		}
	}()
	return srv, nil
}
