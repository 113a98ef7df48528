package app

import (
	"fmt"
	"io"
	"net"

	"petstore/config"
)

// listeners are serve's: the API's, and the debug and metrics ones when cfg names them (else
// nil).
type listeners struct {
	api, debug, metrics net.Listener
}

// bind listens on every address of cfg; an error names the variable of the address.
func bind(cfg config.Config) (lns listeners, err error) {
	if lns.api, err = net.Listen("tcp", cfg.Addr); err != nil {
		return listeners{}, fmt.Errorf("PETSTORE_ADDR: %w", err)
	}
	if cfg.DebugAddr != "" {
		if lns.debug, err = net.Listen("tcp", cfg.DebugAddr); err != nil {
			lns.close()
			return listeners{}, fmt.Errorf("PETSTORE_DEBUG_ADDR: %w", err)
		}
	}
	if cfg.MetricsAddr != "" {
		if lns.metrics, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			lns.close()
			return listeners{}, fmt.Errorf("PETSTORE_METRICS_ADDR: %w", err)
		}
	}
	return lns, nil
}

// close closes every listener of lns.
func (lns listeners) close() {
	for _, ln := range []net.Listener{lns.api, lns.debug, lns.metrics} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// printBanner prints where the server at addr (its listener's address) serves the API and its
// pages, these at the address a browser on this machine opens (localURL).
func printBanner(stdout io.Writer, addr string) {
	base := localURL(addr)
	fmt.Fprintf(stdout, "petstore listening on http://%s (REST at /v1/pets, GraphQL at /v1/graphql)\n", addr)
	fmt.Fprintf(stdout, "REST reference:     %s/v1/docs\n", base)
	fmt.Fprintf(stdout, "GraphQL playground: %s/v1/playground\n", base)
}
