package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The databases whose CPU time counts as the bench's own: the servers under test call them.
var dependencyNames = []string{"mariadbd", "mysqld", "redis-server"}

// cpuSample is the CPU time, in clock ticks, that the machine (all cores, busy or idle) and the
// bench's own processes had used at one moment.
type cpuSample struct {
	busy, total, ours int64
}

// sampleCPU reads /proc: the machine's counters and those of this process, pids and the
// database servers. It returns a zero sample where /proc cannot be read.
func sampleCPU(pids []int) cpuSample {
	var s cpuSample
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for i, f := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		if i >= 8 { // guest time is counted in user time already
			break
		}
		s.total += n
		if i != 3 && i != 4 { // idle, iowait
			s.busy += n
		}
	}
	for _, pid := range append(slices.Clone(pids), append([]int{os.Getpid()}, dependencyPIDs()...)...) {
		s.ours += procTicks(pid)
	}
	return s
}

// dependencyPIDs returns the processes named in dependencyNames.
func dependencyPIDs() []int {
	paths, _ := filepath.Glob("/proc/[0-9]*/comm")
	var pids []int
	for _, p := range paths {
		comm, err := os.ReadFile(p)
		if err != nil || !slices.Contains(dependencyNames, strings.TrimSpace(string(comm))) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procTicks returns the user and system CPU time of pid in clock ticks, or 0.
func procTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces) start at the state, field 3;
	// utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return utime + stime
}

// machineUse is how the machine's CPU was shared over a span: fractions of all cores' time.
type machineUse struct {
	ours, others float64
	ok           bool
}

// useBetween returns the shares of the machine the bench and everything else used from a to b.
func useBetween(a, b cpuSample) machineUse {
	total := float64(b.total - a.total)
	if a.total == 0 || total <= 0 {
		return machineUse{}
	}
	ours := float64(b.ours - a.ours)
	others := float64(b.busy-a.busy) - ours
	return machineUse{ours: ours / total, others: max(others, 0) / total, ok: true}
}
