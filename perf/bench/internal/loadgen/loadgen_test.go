package loadgen

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer answers /small with a Content-Length body, /big with a chunked one, /gone with a
// 404 that closes the connection, GET /v1/pets with three pages linked by rel="next" (no after
// or after=0, then 1, 2), and POST /v1/pets with 201; it records the POSTed bodies.
func testServer(t *testing.T) (addr string, bodies func() []string) {
	t.Helper()
	var mu sync.Mutex
	var posted []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /small", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "[]") })
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "["+strings.Repeat(`{"id":1},`, 2000)+"{}]")
	})
	mux.HandleFunc("GET /gone", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		http.Error(w, "gone", http.StatusNotFound)
	})
	mux.HandleFunc("GET /v1/pets", func(w http.ResponseWriter, r *http.Request) {
		after := r.URL.Query().Get("after")
		if after == "" {
			after = "0"
		}
		if after < "2" {
			w.Header().Set("Link", `</v1/pets?after=`+string(after[0]+1)+`>; rel="next"`)
		}
		_, _ = io.WriteString(w, "[]")
	})
	mux.HandleFunc("POST /v1/pets", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posted = append(posted, string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "{}")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), posted...)
	}
}

func TestRunCountsAnswers(t *testing.T) {
	addr, _ := testServer(t)
	tests := []struct {
		name   string
		path   string
		status int
	}{
		{"content-length body", "/small", 200},
		{"chunked body", "/big", 200},
		{"connection close", "/gone", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fixed(Params{Host: addr, Key: "k"}, "GET", tt.path, "")
			res, err := Run(context.Background(), Options{Addr: addr, Conns: 4, Requests: 200, Build: b})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 200 || res.Statuses[tt.status] != 200 || res.NetErrors != 0 {
				t.Errorf("got %d requests, statuses %v, %d net errors; want 200 answers of %d", res.Requests, res.Statuses, res.NetErrors, tt.status)
			}
			if res.Quantile(0.5) <= 0 || res.Quantile(0.99) < res.Quantile(0.5) {
				t.Errorf("got p50 %v, p99 %v; want 0 < p50 <= p99", res.Quantile(0.5), res.Quantile(0.99))
			}
		})
	}
}

func TestRunForDuration(t *testing.T) {
	addr, _ := testServer(t)
	b := fixed(Params{Host: addr}, "GET", "/small", "")
	res, err := Run(context.Background(), Options{Addr: addr, Conns: 2, Duration: 100 * time.Millisecond, Build: b})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors() != 0 || res.Elapsed < 100*time.Millisecond {
		t.Errorf("got %d requests, %d errors in %v; want some, none, at least 100ms", res.Requests, res.Errors(), res.Elapsed)
	}
}

func TestPostNamesAreUnique(t *testing.T) {
	addr, bodies := testServer(t)
	b, err := Build(Post, Params{Host: addr, Key: "k", Tag: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{Addr: addr, Conns: 3, Requests: 30, Build: b}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, body := range bodies() {
		if seen[body] {
			t.Errorf("body %s sent twice", body)
		}
		seen[body] = true
	}
	if len(seen) != 30 {
		t.Errorf("got %d distinct bodies; want 30", len(seen))
	}
}

func TestRunAgainstNothing(t *testing.T) {
	b := fixed(Params{Host: "127.0.0.1:1"}, "GET", "/", "")
	res, err := Run(context.Background(), Options{Addr: "127.0.0.1:1", Conns: 2, Requests: 4, Build: b})
	if err != nil {
		t.Fatal(err)
	}
	if res.NetErrors != 4 || res.Errors() != 4 {
		t.Errorf("got %d net errors, %d errors; want 4 and 4", res.NetErrors, res.Errors())
	}
}

func TestReadResponseTrailer(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
	r := bufio.NewReader(strings.NewReader(raw))
	for _, want := range []int{200, 204} {
		status, _, err := readResponse(r)
		if err != nil || status != want {
			t.Fatalf("got %d, %v; want %d, nil", status, err, want)
		}
	}
}

func TestNextLink(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"next", []string{`</v1/pets?after=abc&limit=20>; rel="next"`}, "/v1/pets?after=abc&limit=20"},
		{"among others", []string{`</v1/pets>; rel="successor-version", </v1/pets?after=x>; rel="next"`}, "/v1/pets?after=x"},
		{"none", []string{`</v1/pets>; rel="successor-version"`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextLink(tt.values); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		workload string
		answer   Answer
		ok       bool
	}{
		{"list", List, Answer{Status: 200, Body: []byte(`[]`)}, true},
		{"list error", List, Answer{Status: 401, Body: []byte(`{"code":"unauthorized"}`)}, false},
		{"post", Post, Answer{Status: 201, Body: []byte(`{"id":1}`)}, true},
		{"graphql", GraphQL, Answer{Status: 200, Body: []byte(`{"data":{"pets":[]}}`)}, true},
		{"graphql errors", GraphQL, Answer{Status: 200, Body: []byte(`{"errors":[{"message":"x"}],"data":null}`)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Check(tt.workload, tt.answer); (err == nil) != tt.ok {
				t.Errorf("got %v; want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestWalk(t *testing.T) {
	addr, _ := testServer(t)
	p := Params{Host: addr}
	tests := []struct {
		name     string
		n        int
		wantNext string
		wantRead int
	}{
		{"some pages", 2, "/v1/pets?after=2", 2},
		{"past the last", 10, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, read, err := Walk(context.Background(), addr, p, "/v1/pets?after=0", tt.n)
			if err != nil || next != tt.wantNext || read != tt.wantRead {
				t.Errorf("got %q, %d, %v; want %q, %d, nil", next, read, err, tt.wantNext, tt.wantRead)
			}
		})
	}
}

func TestFindPage(t *testing.T) {
	addr, _ := testServer(t)
	p := Params{Host: addr}
	if path, err := FindPage(context.Background(), addr, p, 20, 3); err != nil || path != "/v1/pets?after=2" {
		t.Errorf("page 3: got %q, %v; want /v1/pets?after=2, nil", path, err)
	}
	if path, err := FindPage(context.Background(), addr, p, 20, 4); err == nil {
		t.Errorf("page 4 of 3: got %q, nil; want an error", path)
	}
}
