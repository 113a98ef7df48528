package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"petstore/app"
	"petstore/testkit/dbtest"
)

// cacheInstances serves two instances of the service, as shipped (page cache on), over one
// fresh database of dialect and one Redis, each running its background work, as Serve runs it.
func cacheInstances(t *testing.T, dialect string) (a, b *liveServer) {
	t.Helper()
	cfg := app.DefaultConfig()
	_, cfg.RedisKeyPrefix = dbtest.Redis(t) // skips or fails when unreachable; deleted at the end
	cfg.RedisURL = dbtest.RedisURL()
	insts := sharedInstances(t, dbtest.New(t, dialect), cfg, 2)
	for _, inst := range insts {
		t.Cleanup(inst.svc.Background(context.Background()))
	}
	return insts[0], insts[1]
}

// walkPages reads every page of GET /v1/pets?limit=n from s, following Link rel="next", and
// returns the ids listed.
func walkPages(t *testing.T, s *liveServer, n int) map[int64]bool {
	t.Helper()
	return collectPages(t, n, func(path string) ([]byte, string) {
		req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return body, resp.Header.Get("Link")
	})
}

// collectPages reads every page of GET /v1/pets?limit=n with get, following Link rel="next",
// and returns the ids listed. get answers a path with the body and Link of its 200, or fails t.
func collectPages(t *testing.T, n int, get func(path string) (body []byte, link string)) map[int64]bool {
	t.Helper()
	ids := map[int64]bool{}
	for next := fmt.Sprintf("/v1/pets?limit=%d", n); next != ""; {
		body, link := get(next)
		var page []struct{ ID int64 }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET %s: %v %s", next, err, body)
		}
		for _, p := range page {
			ids[p.ID] = true
		}
		next = ""
		if m := nextLink.FindStringSubmatch(link); m != nil {
			next = m[1]
		}
	}
	return ids
}

// metricValue reads the value of the sample name (without labels) from s's /metrics.
func metricValue(t *testing.T, s *liveServer, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(metricsText(t, s.url))
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCachedPagesNeverLackAnAnsweredPet: two instances share the database and Redis; after
// each 201 from one, a walk of every page through the other, most of them from its page
// cache, lists every pet created so far.
func TestCachedPagesNeverLackAnAnsweredPet(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			a, b := cacheInstances(t, dialect)
			created := map[int64]bool{}
			for i := range 25 {
				created[a.createPet(t, a.key, fmt.Sprint("pet", i), "")] = true
				listed := walkPages(t, b, 2)
				for id := range created {
					if !listed[id] {
						t.Fatalf("after %d pets: pet %d, answered 201 by A, missing from B's pages", i+1, id)
					}
				}
			}
			if hits := metricValue(t, b, "petstore_page_cache_hits_total"); hits < 100 {
				t.Errorf("B's page cache answered %v pages; want most of the walks' 300", hits)
			}
		})
	}
}

// TestLatePetToldAcrossInstances: a write that takes longer than half the settle delay (here
// held up by a lock) may commit among ids other instances have settled, so its instance
// tells every instance to forget it: both count it, once.
func TestLatePetToldAcrossInstances(t *testing.T) {
	t.Parallel()
	a, b := cacheInstances(t, "mysql")
	a.createPet(t, a.key, "first", "")
	rdb, _ := dbtest.Redis(t)
	channel := a.cfg.RedisKeyPrefix + "pages:late"
	within(t, 5*time.Second, "both instances listen for late pets", func() bool {
		n, err := rdb.PubSubNumSub(context.Background(), channel).Result()
		return err == nil && n[channel] == 2
	})
	before := map[*liveServer]float64{}
	for _, s := range []*liveServer{a, b} {
		before[s] = metricValue(t, s, "petstore_page_cache_late_pets_total")
	}
	tx := a.db.DB.Begin() // locks the gap above the last pet: the next insert waits
	if err := tx.Exec("SELECT id FROM pets WHERE id > 0 FOR UPDATE").Error; err != nil {
		t.Fatal(err)
	}
	done := make(chan int64)
	start := time.Now()
	go func() { done <- a.createPet(t, a.key, "slow", "") }()
	time.Sleep(time.Second)
	tx.Rollback()
	<-done
	t.Logf("the slow write took %v", time.Since(start))
	for _, s := range []*liveServer{a, b} {
		within(t, 5*time.Second, "the late pet counted", func() bool {
			return metricValue(t, s, "petstore_page_cache_late_pets_total") == before[s]+1
		})
	}
}

// listedPets reads every page of GET /v1/pets?limit=n through api, following Link rel="next",
// and returns the ids listed.
func (api *testAPI) listedPets(t *testing.T, n int) map[int64]bool {
	t.Helper()
	return collectPages(t, n, func(path string) ([]byte, string) {
		res := api.mustGet(t, path)
		return []byte(res.body), res.header.Get("Link")
	})
}

// checkCachedWalks writes a pet through each instance of apis in turn, and after each 201 walks
// every page (of 2) through each other instance: every pet answered so far must be listed. At
// the end the instances' page caches must have answered most pages.
func checkCachedWalks(t *testing.T, apis []*testAPI, writes int) {
	t.Helper()
	created := map[int64]bool{}
	for i := range writes {
		created[apis[i%len(apis)].createPet(t)] = true
		for j := 1; j < len(apis); j++ {
			listed := apis[(i+j)%len(apis)].listedPets(t, 2)
			for id := range created {
				if !listed[id] {
					t.Fatalf("after %d pets: pet %d, answered 201 by instance %d, missing from instance %d's pages",
						i+1, id, i%len(apis), (i+j)%len(apis))
				}
			}
		}
	}
	var hits float64
	for _, api := range apis {
		m := regexp.MustCompile(`(?m)^petstore_page_cache_hits_total (\S+)$`).FindStringSubmatch(api.mustGet(t, "/metrics").body)
		if m == nil {
			t.Fatal("/metrics has no petstore_page_cache_hits_total")
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		hits += v
	}
	if pages := float64(writes*writes/4) * float64(len(apis)-1); hits < pages/2 {
		t.Errorf("the page caches answered %v pages; want most of some %v", hits, pages)
	}
}

// TestCachedPagesWithReplica: two instances on a primary and its replica, which serves pages
// when it certainly has them: after each 201 through one, every page through the other lists
// every pet answered, from the cache, the replica or the primary.
func TestCachedPagesWithReplica(t *testing.T) {
	t.Parallel()
	db, _ := dbtest.Replicated(t)
	a := newTestAPI(t, db)
	b := newTestAPI(t, db)
	b.key = a.key
	checkCachedWalks(t, []*testAPI{a, b}, 30)
	if served, _ := db.Replicas.Reads(); served == 0 {
		t.Error("the replica served no read; want some")
	}
}
