package config

import (
	"flag"
	"testing"
)

// TestGroups: Register defines the flags of the groups it is given, and those alone.
func TestGroups(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var c Config
	c.Register(fs, Logs|Database)
	for name, want := range map[string]bool{"db": true, "db-timeout": true, "log-level": true, "env": false, "addr": false, "key-cache-ttl": false} {
		if got := fs.Lookup(name) != nil; got != want {
			t.Errorf("--%s defined: got %v; want %v", name, got, want)
		}
	}
}

// TestClosest: an unknown variable is matched with the setting a typo would explain, and with
// none when no setting is that close.
func TestClosest(t *testing.T) {
	for name, want := range map[string]string{
		"PETSTORE_DBB": "PETSTORE_DB", "PETSTORE_DB_TIMOUT": "PETSTORE_DB_TIMEOUT", "PETSTORE_ADR": "PETSTORE_ADDR",
		"PETSTORE_LOGLEVEL": "PETSTORE_LOG_LEVEL", "PETSTORE_redis_url": "PETSTORE_REDIS_URL", "PETSTORE_X": "", "PETSTORE_DATABASE": "",
	} {
		u := UnknownVariables([]string{name + "=1"})
		if len(u) != 1 || u[0].Meant != want {
			t.Errorf("%s: got %+v; want one, meaning %q", name, u, want)
		}
	}
	if u := UnknownVariables([]string{"PETSTORE_DB=x", "PETSTORE_TEST_MYSQL=x", "PETSTORE_KEY=k", "PETSTORE_DBB=", "HOME=/"}); len(u) != 0 {
		t.Errorf("got %+v; want none: settings, the tests' and perf's variables, empty ones and others", u)
	}
}
