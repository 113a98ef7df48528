//go:build unix

package loadgen

import (
	"context"
	"testing"
)

func TestRunMeasuresItsCPU(t *testing.T) {
	addr, _ := testServer(t)
	b := fixed(Params{Host: addr}, "GET", "/big", "")
	res, err := Run(context.Background(), Options{Addr: addr, Conns: 2, Requests: 500, Build: b})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summarize(List, 2)
	if res.CPU <= 0 || s.DriverCPUusReq <= 0 {
		t.Errorf("got CPU %v, %v µs a request; want both above zero", res.CPU, s.DriverCPUusReq)
	}
}
