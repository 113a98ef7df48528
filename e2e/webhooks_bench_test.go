package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/auth"
	"petstore/migrations"
	"petstore/testkit/dbtest"
)

// BenchmarkWebhookLatency adds b.N pets at 1,000 a minute through POST /v1/pets (over HTTP,
// to the whole service on MySQL) with 50 endpoints registered, and reports the delivery
// latency from each 201 to each receiver's arrival: p50 and p99 over every delivery, in ms.
// Run it with a count of pets, such as -benchtime=600x (36 s of load, 30,000 deliveries).
func BenchmarkWebhookLatency(b *testing.B) {
	const endpoints, every = 50, 60 * time.Millisecond // 1,000 pets a minute
	api := newHookAPI(b, dbtest.New(b, migrations.MySQL), hookConfig(time.Second, 5*time.Second))
	api.key = api.createKey(b, auth.KeySpec{Plan: auth.Enterprise, PerMinute: 1e9, PerDay: 1e12})
	srv := httptest.NewServer(api.h)
	defer srv.Close()
	var mu sync.Mutex
	created, arrived := map[int64]time.Time{}, map[int64][]time.Time{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var ev event
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		arrived[ev.Data.Pet.ID] = append(arrived[ev.Data.Pet.ID], at)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	var owners []string // a key has at most 20 endpoints
	for range (endpoints + 19) / 20 {
		owners = append(owners, api.createKey(b, auth.KeySpec{Plan: auth.Business.Name}))
	}
	for i := range endpoints {
		if status, body := call(b, srv.URL, owners[i/20], "/v1/webhooks", fmt.Sprintf(`{"url":"%s/r%d","events":["pet.created"]}`, rcv.URL, i)); status != http.StatusCreated {
			b.Fatalf("register: got %d %s", status, body)
		}
	}
	b.ResetTimer()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := range b.N {
		<-tick.C
		status, body := call(b, srv.URL, api.key, "/v1/pets", fmt.Sprintf(`{"name":"bench-%d","categoryId":1}`, i))
		at := time.Now()
		var pet struct{ ID int64 }
		if status != http.StatusCreated || json.Unmarshal([]byte(body), &pet) != nil {
			b.Fatalf("create: got %d %s", status, body)
		}
		mu.Lock()
		created[pet.ID] = at
		mu.Unlock()
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		n := 0
		for _, ts := range arrived {
			n += len(ts)
		}
		mu.Unlock()
		if n >= b.N*endpoints {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d deliveries arrived within a minute of the last pet", n, b.N*endpoints)
		}
	}
	b.StopTimer()
	var lat []time.Duration
	for id, ts := range arrived {
		for _, t := range ts {
			lat = append(lat, max(0, t.Sub(created[id])))
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(lat)), "deliveries")
}

// call POSTs body to path of base with key and returns the status and the body answered.
func call(tb testing.TB, base, key, path, body string) (int, string) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}
