package store

import (
	"strings"
	"testing"
	"time"
)

func TestMySQLConfig(t *testing.T) {
	for _, tc := range []struct {
		dsn, user, pass, addr, db string
		readTimeout               time.Duration
	}{
		{"mysql://root:@127.0.0.1:3306/test", "root", "", "127.0.0.1:3306", "test", 30 * time.Second},
		{"mysql://app:p%40ss%2Fw:rd@db.internal:3307/pets?readTimeout=2s", "app", "p@ss/w:rd", "db.internal:3307", "pets", 2 * time.Second},
	} {
		cfg, err := mysqlConfig(tc.dsn)
		if err != nil {
			t.Fatalf("mysqlConfig(%q): %v", tc.dsn, err)
		}
		if cfg.User != tc.user || cfg.Passwd != tc.pass || cfg.Addr != tc.addr || cfg.DBName != tc.db || cfg.ReadTimeout != tc.readTimeout || !cfg.ParseTime {
			t.Errorf("mysqlConfig(%q): got %s:%s@%s/%s read %v; want %s:%s@%s/%s read %v", tc.dsn,
				cfg.User, cfg.Passwd, cfg.Addr, cfg.DBName, cfg.ReadTimeout, tc.user, tc.pass, tc.addr, tc.db, tc.readTimeout)
		}
	}
	for _, bad := range []string{"mysql://", "mysql://root@host:3306/", "mysql://root@host:3306/a/b", "mysql://root@host/db?readTimeout=soon"} {
		if _, err := mysqlConfig(bad); err == nil {
			t.Errorf("mysqlConfig(%q): got success; want an error", bad)
		}
	}
}

func TestDialectorFor(t *testing.T) {
	for _, bad := range []string{"", "sqlite:", "postgres://x/y", "petstore.db"} {
		if _, _, err := dialectorFor(bad); err == nil {
			t.Errorf("dialectorFor(%q): got success; want an error", bad)
		}
	}
	if _, dialect, err := dialectorFor("sqlite:/tmp/x.db"); err != nil || dialect != "sqlite" {
		t.Errorf("dialectorFor(sqlite:/tmp/x.db): got %q, %v", dialect, err)
	}
}

// TestOpenHidesPasswords opens MySQL addresses whose passwords hold unescaped / ? # % or @:
// the error never shows a piece of the password, whether the address is refused or the
// connection fails, and no piece reaches the server as a host, port or database name.
func TestOpenHidesPasswords(t *testing.T) {
	for _, tc := range []struct{ password, pieces string }{
		{"Zq7/Xk9", "Zq7 Xk9"}, {"12/Xk9", "Xk9"}, {"Wm4#Rt2", "Wm4 Rt2"}, {"Yp6?Lb3", "Yp6 Lb3"},
		{"Hd5%Gn8", "Hd5 Gn8"}, {"Fc2@Vs6", "Fc2 Vs6"}, {"Ku1/Ee4?Oo5#Ii6@Aa7", "Ku1 Ee4 Oo5 Ii6 Aa7"},
	} {
		for _, dsn := range []string{
			"mysql://app:" + tc.password + "@127.0.0.1:1/pets",
			"mysql://app:" + tc.password + "@127.0.0.1:1",
		} {
			_, err := Open(t.Context(), dsn, DefaultPool)
			if err == nil {
				t.Fatalf("Open(%q): got success; want an error", dsn)
			}
			for _, p := range strings.Fields(tc.pieces) {
				if strings.Contains(err.Error(), p) {
					t.Errorf("Open(%q): error %q shows %q of the password", dsn, err, p)
				}
			}
		}
	}
}

// TestCausalParam: Open adds wsrep_sync_wait=1 to a Galera node's address unless the address
// sets it, whatever its other parameters.
func TestCausalParam(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		has  bool
		with string
	}{
		{"mysql://root:@127.0.0.1:3306/test", false, "mysql://root:@127.0.0.1:3306/test?wsrep_sync_wait=1"},
		{"mysql://root:@h:3306/test?readTimeout=2s", false, "mysql://root:@h:3306/test?readTimeout=2s&wsrep_sync_wait=1"},
		{"mysql://root:@h:3306/test?wsrep_sync_wait=0", true, ""},
		{"mysql://root:@h:3306/test?timeout=1s&wsrep_sync_wait=3", true, ""},
		{"mysql://root:@h:3306/test?xwsrep_sync_wait=1", false, "mysql://root:@h:3306/test?xwsrep_sync_wait=1&wsrep_sync_wait=1"},
	} {
		if got := hasParam(tc.dsn, causalParam); got != tc.has {
			t.Errorf("hasParam(%q): got %v; want %v", tc.dsn, got, tc.has)
		}
		if !tc.has {
			if got := withParam(tc.dsn, causalParam, "1"); got != tc.with {
				t.Errorf("withParam(%q): got %q; want %q", tc.dsn, got, tc.with)
			}
			if _, err := mysqlConfig(tc.with); err != nil {
				t.Errorf("mysqlConfig(%q): %v", tc.with, err)
			}
		}
	}
}
