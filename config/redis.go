package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"petstore/secret"
)

// The kinds of Redis deployment that PETSTORE_REDIS_URL can name.
const (
	RedisNode     = "node"     // one server: redis://[USER:PASS@]HOST:PORT[/N]
	RedisCluster  = "cluster"  // a Redis Cluster: addr= parameters, or cluster=true
	RedisSentinel = "sentinel" // a primary watched by Sentinels: master_name=NAME
)

// RedisTarget is what PETSTORE_REDIS_URL names, parsed by go-redis's own URL parsers: exactly
// one of Node, Cluster and Sentinel is set, as Kind says.
//
//   - redis://[USER:PASS@]HOST:PORT[/N]: one server (redis.ParseURL).
//   - redis://[USER:PASS@]HOST:PORT?addr=HOST2:PORT2&addr=HOST3:PORT3: a Redis Cluster
//     (redis.ParseClusterURL), reached through any of the listed nodes; cluster=true names a
//     cluster behind one address (a configuration endpoint). A cluster has database 0 only.
//   - redis://[USER:PASS@]HOST:PORT[/N]?master_name=NAME[&addr=HOST2:PORT2...]: the primary
//     NAME as Sentinels report it (redis.ParseFailoverURL). HOST:PORT and the addr= addresses
//     are the Sentinels', and so are USER:PASS; the primary's own are the username= and
//     password= parameters.
//
// rediss:// is the same over TLS. Every form takes go-redis's other option parameters
// (dial_timeout=, pool_size=, ...); an unknown one is an error.
type RedisTarget struct {
	Kind     string
	Node     *redis.Options
	Cluster  *redis.ClusterOptions
	Sentinel *redis.FailoverOptions
}

// ParseRedisURL parses PETSTORE_REDIS_URL. Its errors never quote the password.
func ParseRedisURL(address string) (RedisTarget, error) {
	u, err := secret.ParseURL(address)
	if err != nil {
		return RedisTarget{}, fmt.Errorf("PETSTORE_REDIS_URL %w", err)
	}
	t, err := parseRedisURL(u)
	if err != nil {
		// Past secret.ParseURL, go-redis's errors quote only the scheme, the path, an addr=
		// value or option names and values, never the user information.
		return RedisTarget{}, fmt.Errorf("PETSTORE_REDIS_URL: %w", err)
	}
	return t, nil
}

// parseRedisURL picks the form of u by its parameters and hands it to go-redis.
func parseRedisURL(u *url.URL) (RedisTarget, error) {
	q := u.Query()
	cluster := false
	if v := q.Get("cluster"); q.Has("cluster") {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return RedisTarget{}, fmt.Errorf("cluster must be true or false; got %q", v)
		}
		cluster = b
		q.Del("cluster")
		u.RawQuery = q.Encode()
	}
	switch {
	case q.Has("master_name"):
		if cluster {
			return RedisTarget{}, fmt.Errorf("cluster=true and master_name name two kinds of deployment: keep one")
		}
		o, err := redis.ParseFailoverURL(u.String())
		if err == nil && o.MasterName == "" {
			err = fmt.Errorf("master_name must name the Sentinels' primary")
		}
		return RedisTarget{Kind: RedisSentinel, Sentinel: o}, err
	case cluster || q.Has("addr"):
		if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
			return RedisTarget{}, fmt.Errorf("a Redis Cluster has database 0 only; got /%s", p)
		}
		u.Path = ""
		o, err := redis.ParseClusterURL(u.String())
		return RedisTarget{Kind: RedisCluster, Cluster: o}, err
	}
	o, err := redis.ParseURL(u.String())
	return RedisTarget{Kind: RedisNode, Node: o}, err
}

// Addrs returns the addresses t names (servers, cluster nodes or Sentinels), for messages:
// they carry no password.
func (t RedisTarget) Addrs() []string {
	switch t.Kind {
	case RedisCluster:
		return t.Cluster.Addrs
	case RedisSentinel:
		return t.Sentinel.SentinelAddrs
	case RedisNode:
		return []string{t.Node.Addr}
	}
	return nil
}

// String names the kind of deployment t is: "one server", "a Redis Cluster" or "the primary
// "mymaster" of Sentinels".
func (t RedisTarget) String() string {
	switch t.Kind {
	case RedisSentinel:
		return fmt.Sprintf("the primary %q of Sentinels", t.Sentinel.MasterName)
	case RedisCluster:
		return "a Redis Cluster"
	}
	return "one server"
}
