package store

import (
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
