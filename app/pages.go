package app

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"petstore/config"
	"petstore/observe"
	"petstore/store/pets"
)

// LateChannel is the Redis pub/sub channel on which an instance tells the others of a late pet
// (pets.PageCache), after the rate limiter's key prefix. A message is "INSTANCE:ID": the
// sender's random name, which it skips when the message comes back, and the pet's id.
const LateChannel = "pages:late"

// newPageCache returns the page cache of cfg, nil when it is off, its figures exported by
// metrics. Through rdb, when it is not nil, it tells the other instances of each late pet as
// instance; listenLate hears theirs.
func newPageCache(cfg config.Config, rdb redis.UniversalClient, instance string, metrics *observe.Metrics) (*pets.PageCache, error) {
	if cfg.PageCacheBytes == 0 {
		return nil, nil
	}
	var late func(id int64)
	if rdb != nil {
		channel := cfg.RateLimit.RedisKeyPrefix + LateChannel
		late = func(id int64) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := rdb.Publish(ctx, channel, instance+":"+strconv.FormatInt(id, 10)).Err(); err != nil {
				slog.Error("page cache: telling the other instances of a late pet failed; their pages may lack it", "id", id, "err", err)
			}
		}
	}
	pages := pets.NewPageCache(cfg.PageCacheBytes, late)
	return pages, metrics.Register(pageCacheCollectors(pages)...)
}

// pageCacheCollectors export the hits, misses, hit ratio, size and late pets of pages.
func pageCacheCollectors(pages *pets.PageCache) []prometheus.Collector {
	stat := func(f func(s pets.PageCacheStats) float64) func() float64 {
		return func() float64 { return f(pages.Stats()) }
	}
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_page_cache_hits_total",
			Help: "Listing pages answered from the in-process page cache.",
		}, stat(func(s pets.PageCacheStats) float64 { return float64(s.Hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_page_cache_misses_total",
			Help: "Listing pages looked up in the page cache and read from the database.",
		}, stat(func(s pets.PageCacheStats) float64 { return float64(s.Misses) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_page_cache_hit_ratio",
			Help: "Hits over lookups of the page cache since the start (0 before any lookup).",
		}, stat(func(s pets.PageCacheStats) float64 {
			if s.Hits+s.Misses == 0 {
				return 0
			}
			return float64(s.Hits) / float64(s.Hits+s.Misses)
		})),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "petstore_page_cache_bytes",
			Help: "Bytes of the pages the page cache holds, as it weighs them (PETSTORE_PAGE_CACHE bounds them).",
		}, stat(func(s pets.PageCacheStats) float64 { return float64(s.Bytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "petstore_page_cache_late_pets_total",
			Help: "Pets whose write took long enough that cached pages may lack them, this instance's and those other instances told of: each drops the pages it falls among.",
		}, stat(func(s pets.PageCacheStats) float64 { return float64(s.Late) })),
	}
}

// listenLate makes pages forget the late pets other instances tell of on rdb, until ctx ends;
// instance is this one's name, whose own messages it skips. Each time the subscription
// (re)starts, when messages may have been lost, pages is cleared.
func listenLate(ctx context.Context, cfg config.Config, rdb redis.UniversalClient, instance string, pages *pets.PageCache) {
	ps := rdb.Subscribe(ctx, cfg.RateLimit.RedisKeyPrefix+LateChannel)
	defer ps.Close()
	ch := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(5*time.Second), redis.WithChannelSize(64))
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			m, isMessage := msg.(*redis.Message)
			if !isMessage { // a (re)subscription
				pages.Clear()
				continue
			}
			from, id, _ := strings.Cut(m.Payload, ":")
			if n, err := strconv.ParseInt(id, 10, 64); err == nil && from != instance {
				pages.Forget(n)
			}
		}
	}
}
