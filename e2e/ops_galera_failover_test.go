//go:build galera

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGaleraNodeDies kills node 3 (SIGKILL) while writers POST through all three instances,
// then starts it again. The instances of nodes 1 and 2 may fail requests only until the
// cluster has re-formed without node 3, and none from 10 s after the kill; node 3's instance
// turns unready within 5 s and answers 503 with Retry-After, never 401 or 429; every pet
// acknowledged with 201 exists afterwards; once node 3 has rejoined, its instance serves
// again by itself.
func TestGaleraNodeDies(t *testing.T) {
	apis, g := galeraInstances(t, "")
	type answer struct {
		at         time.Duration // since the start, when the request was sent
		code       int
		retryAfter bool
		id         int64
	}
	answers := make([][]answer, len(apis))
	var mu sync.Mutex
	start := time.Now()
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for i := range 9 {
		node := i % 3
		w := &pagingRace{t: t, h: apis[node].h, key: apis[node].key}
		writers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				at := time.Since(start)
				code, hdr, body := w.call(http.MethodPost, "/v1/pets", fmt.Sprintf(`{"name":"n%d-%d","categoryId":1}`, node, n), nil)
				a := answer{at: at, code: code, retryAfter: hdr.Get("Retry-After") != ""}
				if code == http.StatusCreated {
					var pet struct{ ID int64 }
					if err := json.Unmarshal(body, &pet); err != nil || pet.ID == 0 {
						t.Errorf("201 without a pet: %s", body)
					}
					a.id = pet.ID
				}
				mu.Lock()
				answers[node] = append(answers[node], a)
				mu.Unlock()
				if code != http.StatusCreated {
					time.Sleep(20 * time.Millisecond) // no busy loop on an instance that cannot write
				}
			}
		})
	}
	ready := func(api *testAPI) int {
		rec := httptest.NewRecorder()
		api.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code
	}

	time.Sleep(3 * time.Second)
	killed := time.Since(start)
	g.Nodes[2].Kill()
	var unready, reformed time.Duration
	for unready == 0 || reformed == 0 {
		if unready == 0 && ready(apis[2]) != http.StatusOK {
			unready = time.Since(start) - killed
		}
		if reformed == 0 && g.Nodes[0].Status("wsrep_cluster_size") == "2" && g.Nodes[0].Status("wsrep_ready") == "ON" {
			reformed = time.Since(start) - killed
		}
		if time.Since(start)-killed > 30*time.Second {
			t.Fatalf("30 s after the kill: unready after %v, re-formed after %v", unready, reformed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("node 3 killed at %v: its instance unready after %v; the cluster re-formed without it after %v",
		killed.Round(time.Millisecond), unready.Round(time.Millisecond), reformed.Round(time.Millisecond))
	time.Sleep(killed + 15*time.Second - time.Since(start)) // 15 s of load without node 3

	g.Nodes[2].Start(t, false)
	rejoined := time.Since(start)
	var recovered time.Duration
	for recovered == 0 {
		if ready(apis[2]) == http.StatusOK {
			if code, _, _ := (&pagingRace{h: apis[2].h, key: apis[2].key}).call(http.MethodPost, "/v1/pets", `{"name":"back","categoryId":1}`, nil); code == http.StatusCreated {
				recovered = time.Since(start) - rejoined
			}
		}
		if time.Since(start)-rejoined > 30*time.Second {
			t.Fatal("node 3's instance did not serve again within 30 s of its node's rejoining")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	writers.Wait()

	// What each instance answered, from the kill to the rejoin.
	var acked []int64
	lastError := time.Duration(0)
	for node, as := range answers {
		counts := map[int]int{}
		for _, a := range as {
			if a.code == http.StatusCreated {
				acked = append(acked, a.id)
			}
			if a.code >= 500 && !a.retryAfter {
				t.Errorf("node %d's instance: %d without Retry-After", node+1, a.code)
			}
			if a.code != http.StatusCreated && a.code != http.StatusServiceUnavailable {
				t.Errorf("node %d's instance at %v: got %d; want 201 or 503", node+1, a.at, a.code)
			}
			if a.at < killed || a.at > rejoined {
				continue
			}
			counts[a.code]++
			if node < 2 && a.code >= 500 {
				lastError = max(lastError, a.at-killed)
				if a.at-killed > 10*time.Second {
					t.Errorf("node %d's instance %v after the kill: got %d; want no 5xx from 10 s on", node+1, a.at-killed, a.code)
				}
			}
		}
		t.Logf("node %d's instance, from the kill to the rejoin: %v", node+1, counts)
	}
	t.Logf("last 5xx on nodes 1-2 %v after the kill; node 3 rejoined (%v after the kill), its instance serving again %v later",
		lastError.Round(time.Millisecond), (rejoined - killed).Round(time.Millisecond), recovered.Round(time.Millisecond))
	if unready > 5*time.Second {
		t.Errorf("node 3's instance unready %v after the kill; want within 5 s", unready)
	}

	// Every acknowledged pet exists, read on node 3 (which has caught up) and node 1.
	for _, node := range []int{0, 2} {
		var n int64
		ids := make([]string, len(acked))
		for i, id := range acked {
			ids[i] = strconv.FormatInt(id, 10)
		}
		if err := apis[node].db.Raw("SELECT COUNT(*) FROM pets WHERE id IN (" + strings.Join(ids, ",") + ")").Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		t.Logf("node %d: %d of %d acknowledged pets found", node+1, n, len(acked))
		if n != int64(len(acked)) {
			t.Errorf("node %d: %d of %d acknowledged pets found; want all", node+1, n, len(acked))
		}
	}
}

// TestGaleraNodeCutOff cuts node 3 off from the others (gmcast.isolate) without stopping it:
// its server still accepts connections but refuses every statement (1047), so its instance
// must turn unready within 5 s and answer 503 with Retry-After, not 500; once the node is let
// back, the instance serves again by itself.
func TestGaleraNodeCutOff(t *testing.T) {
	apis, g := galeraInstances(t, "")
	w := &pagingRace{t: t, h: apis[2].h, key: apis[2].key}
	ready := func() int {
		rec := httptest.NewRecorder()
		apis[2].h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code
	}
	if err := g.Nodes[2].Exec("SET GLOBAL wsrep_provider_options='gmcast.isolate=1'"); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	for ready() == http.StatusOK {
		if time.Since(cut) > 5*time.Second {
			t.Fatal("node 3's instance still ready 5 s after its node was cut off")
		}
		time.Sleep(50 * time.Millisecond)
	}
	unready := time.Since(cut)
	for _, req := range [][2]string{{http.MethodGet, "/v1/pets/1"}, {http.MethodGet, "/v1/pets"}, {http.MethodPost, "/v1/pets"}} {
		body := ""
		if req[0] == http.MethodPost {
			body = `{"name":"cut","categoryId":1}`
		}
		code, hdr, resp := w.call(req[0], req[1], body, nil)
		if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
			t.Errorf("%s %s on the cut-off node: got %d (Retry-After %q) %s; want 503 with Retry-After", req[0], req[1], code, hdr.Get("Retry-After"), resp)
		}
	}
	if err := g.Nodes[2].Exec("SET GLOBAL wsrep_provider_options='gmcast.isolate=0'"); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for {
		if ready() == http.StatusOK {
			if code, _, _ := w.call(http.MethodPost, "/v1/pets", `{"name":"back","categoryId":1}`, nil); code == http.StatusCreated {
				break
			}
		}
		if time.Since(back) > 60*time.Second {
			t.Fatal("node 3's instance did not serve again within 60 s of its node's return")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("node 3 cut off: its instance unready after %v; let back: serving again after %v",
		unready.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
}
