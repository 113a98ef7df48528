package app

import (
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"petstore/config"
	"petstore/live/conns"
)

// cgroupRoot is where the process's control groups are mounted (a container's own).
const cgroupRoot = "/sys/fs/cgroup"

// liveCapacity returns what the instance holds of live connections (conns.Capacity): cfg's
// PETSTORE_LIVE_CONNECTIONS_MAX and PETSTORE_WS_PENDING_MAX where set, else sized from the
// memory the process may use (memoryLimit), which it logs.
func liveCapacity(cfg config.Config) conns.Capacity {
	mem := memoryLimit(debug.SetMemoryLimit(-1), cgroupRoot)
	c := conns.CapacityFor(mem)
	if cfg.LiveConnectionsMax > 0 {
		c.Connections, c.Pending = cfg.LiveConnectionsMax, max(cfg.LiveConnectionsMax/2, 1)
	}
	if cfg.WSPendingMax > 0 {
		c.Pending = min(cfg.WSPendingMax, c.Connections)
	}
	slog.Info("live connections bounded", "memory_mib", mem>>20, "connections", c.Connections, "pending", c.Pending)
	return c
}

// memoryLimit returns the memory the process may use: the smaller of goLimit (GOMEMLIMIT,
// math.MaxInt64 when unset) and the limit of its memory cgroup under root (memory.max of
// cgroup v2, else memory/memory.limit_in_bytes of v1), or conns.DefaultMemory when neither sets
// one.
func memoryLimit(goLimit int64, root string) int64 {
	limit := goLimit
	for _, f := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		if n, ok := readLimit(filepath.Join(root, f)); ok {
			limit = min(limit, n)
			break
		}
	}
	if limit <= 0 || limit >= math.MaxInt64/2 { // cgroup v1 writes "no limit" as a page-aligned MaxInt64
		return conns.DefaultMemory
	}
	return limit
}

// readLimit reads the byte count of a cgroup limit file; "max" (no limit) is math.MaxInt64.
// It reports false when the file cannot be read or holds neither.
func readLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return math.MaxInt64, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
