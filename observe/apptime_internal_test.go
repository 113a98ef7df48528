package observe

import (
	"testing"
	"time"
)

// TestAppendTime checks appendTime against time.RFC3339Nano in several zones, around whole
// seconds, and for years it leaves to the time package.
func TestAppendTime(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("", 2*3600+30*60), time.FixedZone("", -7*3600)}
	base := []time.Time{
		time.Date(2026, 11, 25, 18, 21, 17, 0, time.UTC),
		time.Date(2026, 11, 25, 18, 21, 17, 123456789, time.UTC),
		time.Date(2026, 11, 25, 18, 21, 17, 100000000, time.UTC),
		time.Date(2026, 11, 25, 18, 21, 17, 1, time.UTC),
		time.Date(2026, 11, 25, 18, 21, 17, 999999999, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 500, time.UTC),
		time.Date(12000, 1, 1, 0, 0, 0, 5, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 5, time.UTC),
		time.Now(),
	}
	for _, loc := range zones {
		for _, tm := range base {
			for _, d := range []time.Duration{0, time.Nanosecond, time.Millisecond, time.Second} {
				u := tm.Add(d).In(loc)
				for range 2 { // the second time from the cache
					if got, want := string(appendTime([]byte("x"), u)), "x"+u.Format(time.RFC3339Nano); got != want {
						t.Fatalf("appendTime(%v) = %q, want %q", u, got, want)
					}
				}
			}
		}
	}
}
