package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"petstore/client"
)

// printedAddrs returns, from the lines serve printed, the API's base address and the address
// on the line that starts with prefix.
func printedAddrs(lines []string, prefix string) (base, other string) {
	for _, line := range lines {
		if addr, ok := strings.CutPrefix(line, prefix); ok {
			other = addr
		}
		if addr, ok := strings.CutPrefix(line, "petstore listening on "); ok {
			base = strings.Fields(addr)[0]
		}
	}
	return base, other
}

// TestDebugListener checks that PETSTORE_DEBUG_ADDR serves the profiling endpoints on their own
// listener, and that the API's listener does not.
func TestDebugListener(t *testing.T) {
	lines, _, _ := startServerLines(t, "PETSTORE_DEBUG_ADDR", "127.0.0.1:0")
	base, debug := printedAddrs(lines, "profiling endpoints on ")
	if debug == "" || base == "" {
		t.Fatalf("serve printed %q; want the profiling address and the API's", lines)
	}
	for url, want := range map[string]int{debug + "goroutine?debug=1": http.StatusOK, base + "/debug/pprof/goroutine?debug=1": http.StatusNotFound} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: got %d; want %d", url, resp.StatusCode, want)
		}
	}
}

// TestMetricsListener checks that PETSTORE_METRICS_ADDR serves /metrics on a listener of its
// own, with nothing else there, and that the API's listener then answers /metrics with 404.
func TestMetricsListener(t *testing.T) {
	lines, _, _ := startServerLines(t, "PETSTORE_METRICS_ADDR", "127.0.0.1:0")
	base, metrics := printedAddrs(lines, "metrics on ")
	if metrics == "" || base == "" {
		t.Fatalf("serve printed %q; want the metrics address and the API's", lines)
	}
	metricsBase := strings.TrimSuffix(metrics, "/metrics")
	for url, want := range map[string]int{
		metrics: http.StatusOK, base + "/metrics": http.StatusNotFound,
		metricsBase + "/v1/pets": http.StatusNotFound, metricsBase + "/healthz": http.StatusNotFound,
	} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: got %d; want %d", url, resp.StatusCode, want)
		}
		if want == http.StatusOK && !strings.Contains(string(body), "petstore_build_info") {
			t.Errorf("GET %s: no petstore_build_info in %.200s", url, body)
		}
	}
}

// goMemProfileRate is Go's own sampling rate of heap profiles, read before any server starts.
var goMemProfileRate = runtime.MemProfileRate

// TestHeapProfilingOnlyWithDebugListener: allocations are sampled for heap profiles (a stack
// walk each) only when the profiling endpoints can serve them, and then at Go's own rate.
func TestHeapProfilingOnlyWithDebugListener(t *testing.T) {
	_, stop, done := startServerLines(t)
	if runtime.MemProfileRate != 0 {
		t.Errorf("serving without PETSTORE_DEBUG_ADDR: MemProfileRate %d; want 0", runtime.MemProfileRate)
	}
	stop()
	<-done
	lines, _, _ := startServerLines(t, "PETSTORE_DEBUG_ADDR", "127.0.0.1:0")
	for _, line := range lines {
		if debug, ok := strings.CutPrefix(line, "profiling endpoints on "); ok {
			resp, err := http.Get(debug + "heap?debug=1")
			if err != nil {
				t.Fatal(err)
			}
			first, _ := bufio.NewReader(resp.Body).ReadString('\n')
			resp.Body.Close()
			if want := fmt.Sprintf("@ heap/%d\n", 2*goMemProfileRate); goMemProfileRate == 0 || !strings.HasSuffix(first, want) {
				t.Errorf("the heap profile begins %q; want it sampled at Go's rate (%q)", first, want)
			}
		}
	}
}

func TestServeEndToEnd(t *testing.T) {
	base, key, stop, done := startServer(t)
	waitHealthy(t, base)
	c, err := client.New(client.Config{BaseURL: base + "/v1", APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	pet, err := c.CreatePet(t.Context(), client.NewPet{Name: "Rex", CategoryId: 1})
	if err != nil || pet.Id != 1 || pet.Name != "Rex" {
		t.Fatalf("createPet with the development key: got %+v, %v; want Rex with id 1", pet, err)
	}
	if page, err := c.ListPets(t.Context(), client.ListPetsParams{}); err != nil || len(page.Pets) != 1 || page.Pets[0].Id != 1 {
		t.Fatalf("listPets: got %+v, %v; want Rex alone", page, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("run after stop: got %v; want nil", err)
	}
}

// TestShutdownDrains checks that a request in flight when the server is told to stop is
// still answered, and its pet stored. The request is sent by hand, not with package client:
// its body is held back halfway, which only a raw request can do.
func TestShutdownDrains(t *testing.T) {
	base, key, stop, done := startServer(t)
	waitHealthy(t, base)
	body, w := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/pets", body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(`{"name":"Rex","categoryId":1}`))
	answer := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		answer <- resp
	}()
	_, _ = w.Write([]byte(`{"name":"Rex",`)) // the request is now in flight
	time.Sleep(100 * time.Millisecond)
	stop()
	time.Sleep(100 * time.Millisecond)
	_, _ = w.Write([]byte(`"categoryId":1}`))
	w.Close()
	resp := <-answer
	if resp == nil {
		t.Fatal("no answer to the in-flight request")
	}
	var pet struct{ ID int64 }
	_ = json.NewDecoder(resp.Body).Decode(&pet)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || pet.ID != 1 {
		t.Errorf("in-flight POST: got %d id %d; want 201 id 1", resp.StatusCode, pet.ID)
	}
	if err := <-done; err != nil {
		t.Errorf("run after stop: got %v; want nil", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the listener still accepts after shutdown")
	}
}
