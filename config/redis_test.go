package config_test

import (
	"slices"
	"strings"
	"testing"

	"petstore/config"
)

func TestParseRedisURL(t *testing.T) {
	tests := []struct {
		url   string
		kind  string
		addrs []string
		check func(config.RedisTarget) bool
	}{
		{"redis://127.0.0.1:6379/2", config.RedisNode, []string{"127.0.0.1:6379"},
			func(r config.RedisTarget) bool { return r.Node.DB == 2 }},
		{"redis://:s3cret@cache:6380/0?dial_timeout=2s", config.RedisNode, []string{"cache:6380"},
			func(r config.RedisTarget) bool {
				return r.Node.Password == "s3cret" && r.Node.DialTimeout.Seconds() == 2
			}},
		{"redis://a:7000?addr=b:7001&addr=c:7002", config.RedisCluster, []string{"a:7000", "b:7001", "c:7002"}, nil},
		{"redis://app:pw@cfg.cache:6379?cluster=true", config.RedisCluster, []string{"cfg.cache:6379"},
			func(r config.RedisTarget) bool { return r.Cluster.Username == "app" && r.Cluster.Password == "pw" }},
		{"rediss://a:7000/0?addr=b:7001", config.RedisCluster, []string{"a:7000", "b:7001"},
			func(r config.RedisTarget) bool { return r.Cluster.TLSConfig != nil }},
		{"redis://s1:26379/1?master_name=mymaster&addr=s2:26379&password=pw", config.RedisSentinel, []string{"s1:26379", "s2:26379"},
			func(r config.RedisTarget) bool {
				return r.Sentinel.MasterName == "mymaster" && r.Sentinel.DB == 1 && r.Sentinel.Password == "pw"
			}},
		{"redis://127.0.0.1:6379?cluster=false", config.RedisNode, []string{"127.0.0.1:6379"}, nil},
	}
	for _, tt := range tests {
		got, err := config.ParseRedisURL(tt.url)
		if err != nil {
			t.Errorf("config.ParseRedisURL(%q): %v", tt.url, err)
			continue
		}
		if got.Kind != tt.kind || !slices.Equal(got.Addrs(), tt.addrs) || (tt.check != nil && !tt.check(got)) {
			t.Errorf("config.ParseRedisURL(%q): got %s %v (%+v %+v %+v); want %s %v", tt.url, got.Kind, got.Addrs(),
				got.Node, got.Cluster, got.Sentinel, tt.kind, tt.addrs)
		}
	}
}

// TestBadRedisURLs checks that a Redis address that cannot work is refused when the settings
// are read, before anything is opened, with an error that says what is wrong and never shows
// the password.
func TestBadRedisURLs(t *testing.T) {
	for url, want := range map[string]string{
		"http://:Pw9xK2@cache:6379":                          "invalid URL scheme",
		"cache:6379":                                         "invalid URL scheme",
		"redis://:Pw9xK2@cache:6379/x":                       "invalid database number",
		"redis://:Pw9xK2@a:7000/3?addr=b:7001":               "database 0 only",
		"redis://:Pw9xK2@a:7000?addr=b":                      "addr",
		"redis://:Pw9xK2@a:7000?cluster=maybe":               "cluster must be true or false",
		"redis://:Pw9xK2@a:7000?cluster=1&master_name=m":     "two kinds",
		"redis://:Pw9xK2@s:26379?master_name=":               "master_name",
		"redis://:Pw9xK2@a:7000?addr=b:7001&pool_size=lots":  "pool_size",
		"redis://:Pw9xK2@a:7000?addr=b:7001&dial_timeoutx=1": "unexpected option",
		"redis://:Pw9/xK2@cache:6379":                        "percent-encode",
	} {
		_, err := parse(t, map[string]string{"PETSTORE_REDIS_URL": url})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "PETSTORE_REDIS_URL") {
			t.Errorf("%s: got %v; want an error naming PETSTORE_REDIS_URL and %q", url, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "Pw9") {
			t.Errorf("%s: error %q shows the password", url, err)
		}
	}
}
