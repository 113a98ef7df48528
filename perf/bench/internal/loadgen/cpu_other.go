//go:build !unix

package loadgen

import "time"

// processCPU returns 0 where the process's CPU time is not read (see cpu_unix.go).
func processCPU() time.Duration { return 0 }
