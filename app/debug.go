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

	"petstore/rest"
)

// serveAuxiliaries serves the profiling endpoints (PETSTORE_DEBUG_ADDR) and the metrics
// (PETSTORE_METRICS_ADDR) on their listeners of lns when cfg named them, and returns the
// function that closes them; a failure of their servers is sent to errc.
func serveAuxiliaries(lns listeners, svc *Service, errc chan<- error, stdout io.Writer) (closeAll func()) {
	var servers []*http.Server
	profileHeap(lns.debug != nil)
	if lns.debug != nil {
		debug := serveDebug(lns.debug, errc)
		servers = append(servers, debug)
		fmt.Fprintf(stdout, "profiling endpoints on http://%s/debug/pprof/\n", debug.Addr)
	}
	if lns.metrics != nil {
		metrics := serveMetrics(lns.metrics, svc.Metrics, errc)
		servers = append(servers, metrics)
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", metrics.Addr)
	}
	return func() {
		for _, s := range servers {
			_ = s.Close()
		}
	}
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

// serveDebug serves net/http/pprof's endpoints on their own listener ln, away from the API's
// router, middleware and limits; a failure of its server is sent to errc.
func serveDebug(ln net.Listener, errc chan<- error) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serveAux("debug", ln, mux, errc)
}

// serveMetrics serves h, the Prometheus handler, at /metrics on a listener of its own, ln
// (PETSTORE_METRICS_ADDR), and nothing else.
func serveMetrics(ln net.Listener, h http.Handler, errc chan<- error) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return serveAux("metrics", ln, mux, errc)
}

// serveAux serves h on a listener of its own, ln, named name in errors sent to errc.
func serveAux(name string, ln net.Listener, h http.Handler, errc chan<- error) *http.Server {
	srv := &http.Server{Addr: ln.Addr().String(), Handler: rest.NoSniff(h), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("%s listener: %w", name, err)
		}
	}()
	return srv
}
