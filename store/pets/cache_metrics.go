package pets

import "github.com/prometheus/client_golang/prometheus"

// cacheDescs are the metrics of the page cache, in the order Collect sends them.
var cacheDescs = []struct {
	desc    *prometheus.Desc
	counter bool
}{
	{prometheus.NewDesc("petstore_page_cache_hits_total", "Listing pages answered from the in-process page cache.", nil, nil), true},
	{prometheus.NewDesc("petstore_page_cache_misses_total", "Listing pages looked up in the page cache and read from the database.", nil, nil), true},
	{prometheus.NewDesc("petstore_page_cache_hit_ratio", "Hits over lookups of the page cache since the start (0 before any lookup).", nil, nil), false},
	{prometheus.NewDesc("petstore_page_cache_bytes", "Bytes of the pages the page cache holds, as it weighs them (PETSTORE_PAGE_CACHE bounds them).", nil, nil), false},
	{prometheus.NewDesc("petstore_page_cache_late_pets_total", "Pets whose write took long enough that cached pages may lack them, this instance's and those other instances told of: each drops the pages it falls among.", nil, nil), true},
}

// NewCacheCollector returns the Prometheus collector of pages' hits, misses, hit ratio, size
// and late pets, read once a scrape (PageCache.Stats, which applies the cache's pending
// writes first).
func NewCacheCollector(pages *PageCache) prometheus.Collector { return cacheCollector{pages} }

// cacheCollector is the collector of NewCacheCollector.
type cacheCollector struct{ pages *PageCache }

// Describe sends the descriptions of the metrics.
func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range cacheDescs {
		ch <- m.desc
	}
}

// Collect sends the figures of the cache.
func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pages.Stats()
	ratio := 0.0
	if s.Hits+s.Misses > 0 {
		ratio = float64(s.Hits) / float64(s.Hits+s.Misses)
	}
	for i, v := range []float64{float64(s.Hits), float64(s.Misses), ratio, float64(s.Bytes), float64(s.Late)} {
		kind := prometheus.GaugeValue
		if cacheDescs[i].counter {
			kind = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(cacheDescs[i].desc, kind, v)
	}
}
