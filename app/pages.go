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
	return pages, metrics.Register(pageCacheCollector{pages})
}

// pageCacheDescs are the metrics of the page cache, in the order Collect sends them.
var pageCacheDescs = []struct {
	desc    *prometheus.Desc
	counter bool
}{
	{prometheus.NewDesc("petstore_page_cache_hits_total", "Listing pages answered from the in-process page cache.", nil, nil), true},
	{prometheus.NewDesc("petstore_page_cache_misses_total", "Listing pages looked up in the page cache and read from the database.", nil, nil), true},
	{prometheus.NewDesc("petstore_page_cache_hit_ratio", "Hits over lookups of the page cache since the start (0 before any lookup).", nil, nil), false},
	{prometheus.NewDesc("petstore_page_cache_bytes", "Bytes of the pages the page cache holds, as it weighs them (PETSTORE_PAGE_CACHE bounds them).", nil, nil), false},
	{prometheus.NewDesc("petstore_page_cache_late_pets_total", "Pets whose write took long enough that cached pages may lack them, this instance's and those other instances told of: each drops the pages it falls among.", nil, nil), true},
}

// pageCacheCollector exports the hits, misses, hit ratio, size and late pets of a page cache,
// read once a scrape (PageCache.Stats, which applies the cache's pending writes first).
type pageCacheCollector struct{ pages *pets.PageCache }

// Describe sends the descriptions of the metrics.
func (c pageCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range pageCacheDescs {
		ch <- m.desc
	}
}

// Collect sends the figures of the cache.
func (c pageCacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pages.Stats()
	ratio := 0.0
	if s.Hits+s.Misses > 0 {
		ratio = float64(s.Hits) / float64(s.Hits+s.Misses)
	}
	for i, v := range []float64{float64(s.Hits), float64(s.Misses), ratio, float64(s.Bytes), float64(s.Late)} {
		kind := prometheus.GaugeValue
		if pageCacheDescs[i].counter {
			kind = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(pageCacheDescs[i].desc, kind, v)
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
