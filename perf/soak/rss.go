package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// rssSample is the service's resident memory at one time.
type rssSample struct {
	at  time.Time
	kib int64
}

// rssSampler samples a process's VmRSS periodically.
type rssSampler struct {
	pid     int
	samples []rssSample
	err     error // the first failed read
	stop    chan struct{}
	done    chan struct{}
}

// startRSS samples the VmRSS of process pid now and then every period, until finish.
func startRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

// finish takes a last sample, stops sampling and returns the samples and the first error.
func (s *rssSampler) finish() ([]rssSample, error) {
	close(s.stop)
	<-s.done
	s.sample()
	return s.samples, s.err
}

// sample reads VmRSS once.
func (s *rssSampler) sample() {
	kib, err := readRSS(s.pid)
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return
	}
	s.samples = append(s.samples, rssSample{at: time.Now(), kib: kib})
}

// readRSS returns the VmRSS of process pid in KiB.
func readRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseVmRSS(bufio.NewScanner(f))
}

// parseVmRSS returns the value of the "VmRSS:   1234 kB" line of a /proc/PID/status.
func parseVmRSS(lines *bufio.Scanner) (int64, error) {
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("unexpected VmRSS line %q", lines.Text())
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	if err := lines.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no VmRSS line")
}

// afterWarmup returns the first sample taken at or after at.
func afterWarmup(samples []rssSample, at time.Time) (rssSample, bool) {
	for _, s := range samples {
		if !s.at.Before(at) {
			return s, true
		}
	}
	return rssSample{}, false
}

// peak returns the largest sample.
func peak(samples []rssSample) rssSample {
	var p rssSample
	for _, s := range samples {
		if s.kib > p.kib {
			p = s
		}
	}
	return p
}

// mib formats KiB as MiB.
func mib(kib int64) string {
	return fmt.Sprintf("%.1f MiB", float64(kib)/1024)
}
