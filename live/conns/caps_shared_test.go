package conns

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/apierr"
	"petstore/auth"
	"petstore/live"
	"petstore/testkit/dbtest"
)

// TestLeasesFailurePolicy: while the Redis of the caps is down (a server of the test's own,
// stopped), a new connection gets the failure policy of the Registry's own: failing open, the
// instance's caps and no more; failing closed, unavailable. (Through the service the rate
// limiter, on the same Redis, answers such requests first.) What was open stays held, and once
// Redis is back the renewals put every lease held into it.
func TestLeasesFailurePolicy(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		t.Run(map[bool]string{true: "fail open", false: "fail closed"}[failOpen], func(t *testing.T) {
			r := dbtest.NewRedisServer(t)
			client := redis.NewClient(&redis.Options{Addr: r.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
			t.Cleanup(func() { _ = client.Close() })
			leases := NewLeases(client, "t:")
			reg := NewRegistry(live.NewHub(live.HubOptions{}), RegistryOptions{Leases: leases, FailOpen: failOpen})
			t.Cleanup(reg.Shutdown)
			p := &auth.Principal{KeyID: 7, Plan: auth.Free}
			ctx := context.Background()
			open := func() error {
				_, err := reg.Open(ctx, p, func(int, string) {}, true)
				return err
			}
			if err := open(); err != nil {
				t.Fatal(err)
			}

			r.Stop(t)
			err := open()
			if failOpen {
				if err != nil {
					t.Fatalf("second stream with Redis down: %v; want it held on this instance", err)
				}
				if err := open(); apierr.From(err).Code != apierr.RateLimited {
					t.Fatalf("third stream with Redis down: %v; want rate_limited (this instance's cap)", err)
				}
			} else if apierr.From(err).Code != apierr.Unavailable {
				t.Fatalf("second stream with Redis down: %v; want unavailable", err)
			}

			r.Restart(t)
			want := int64(1)
			if failOpen {
				want = 2
			}
			deadline := time.Now().Add(RenewEvery + 2*time.Second)
			for {
				n, _ := client.ZCard(ctx, leases.set("subs", 7)).Result()
				if n == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d subscription leases in the restarted Redis; want the %d held", n, want)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
