package e2e

import (
	"testing"
	"time"

	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestWebhookNoEndpointReadsNothing checks that while no endpoint exists a pet costs its
// INSERT alone: the pets' commits wake the dispatcher, which then reads the endpoints at most
// every 100 ms (webhooks' idleLook) and at each poll (a second), not once a pet. An endpoint
// registered afterwards gets the pet created right after it within the next look, before the
// poll.
func TestWebhookNoEndpointReadsNothing(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newHookAPI(t, db, hookConfig())
		postPetNamed(t, api, "Warm") // warms the key cache
		plain := api.db.DB.ConnPool
		pool := countStatements(api.db.DB) // which begins no transaction: POST /v1/pets needs none
		start := time.Now()
		const pets = 60
		for i := range pets {
			postPetNamed(t, api, "Rex")
			if i%20 == 19 {
				time.Sleep(150 * time.Millisecond) // wake-ups past a look's interval
			}
		}
		took := time.Since(start)
		// A look per 100 ms and per poll, and one under way as the time was read.
		if got, most := pool.endpointReads.Load(), int64(took/(100*time.Millisecond)+took/time.Second)+2; got > most {
			t.Errorf("%d pets, no endpoint: the endpoints read %d times in %v; want at most %d", pets, got, took.Round(time.Millisecond), most)
		}
		api.db.DB.ConnPool, api.db.DB.Statement.ConnPool = plain, plain
		id, _ := api.createHook(t, "http://127.0.0.1:9/hooks")
		postPetNamed(t, api, "Tom")
		within(t, 900*time.Millisecond, "the pet created after the endpoint queued before the poll", func() bool {
			var n int64
			err := db.Raw("SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?", id).Scan(&n).Error
			return err == nil && n == 1
		})
	})
}
