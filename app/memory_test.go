package app

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"petstore/live/conns"
)

// TestMemoryLimit: the smaller of GOMEMLIMIT and the cgroup's limit (v2, else v1), and
// conns.DefaultMemory when neither sets one.
func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name    string
		goLimit int64
		files   map[string]string
		want    int64
	}{
		{"nothing", math.MaxInt64, nil, conns.DefaultMemory},
		{"GOMEMLIMIT alone", 200 * mib, nil, 200 * mib},
		{"v2 limit", math.MaxInt64, map[string]string{"memory.max": "268435456\n"}, 256 * mib},
		{"v2 max", math.MaxInt64, map[string]string{"memory.max": "max\n"}, conns.DefaultMemory},
		{"GOMEMLIMIT below v2", 200 * mib, map[string]string{"memory.max": "268435456\n"}, 200 * mib},
		{"v2 below GOMEMLIMIT", 300 * mib, map[string]string{"memory.max": "268435456\n"}, 256 * mib},
		{"v1 limit", math.MaxInt64, map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}, 512 * mib},
		{"v1 unlimited", math.MaxInt64, map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, conns.DefaultMemory},
		{"v2 wins over v1", math.MaxInt64, map[string]string{"memory.max": "268435456", "memory/memory.limit_in_bytes": "1048576"}, 256 * mib},
		{"unreadable", math.MaxInt64, map[string]string{"memory.max": "lots"}, conns.DefaultMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range tc.files {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := memoryLimit(tc.goLimit, root); got != tc.want {
				t.Fatalf("memoryLimit = %d MiB; want %d MiB", got/mib, tc.want/mib)
			}
		})
	}
}
