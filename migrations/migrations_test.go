package migrations

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"

	_ "github.com/glebarez/go-sqlite" // the "sqlite" driver
)

// TestApplyLogsEachMigration checks that each migration applied is logged with its version,
// its file and how long it took in milliseconds, as the request log gives durations.
func TestApplyLogsEachMigration(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&out, nil)))
	defer slog.SetDefault(prev)

	n, err := Apply(context.Background(), db, SQLite)
	if err != nil || n == 0 {
		t.Fatalf("Apply: %d, %v; want some migrations applied", n, err)
	}
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	if len(lines) != n {
		t.Fatalf("got %d log lines for %d migrations:\n%s", len(lines), n, out.Bytes())
	}
	for _, line := range lines {
		var rec struct {
			Msg        string   `json:"msg"`
			Version    int64    `json:"version"`
			File       string   `json:"file"`
			DurationMS *float64 `json:"duration_ms"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Msg != "migration applied" || rec.Version < 1 || rec.File == "" || rec.DurationMS == nil ||
			*rec.DurationMS < 0 || *rec.DurationMS > 60_000 {
			t.Errorf("log line %s: want the version, the file and duration_ms in milliseconds", line)
		}
	}
}
