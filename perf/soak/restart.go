package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"petstore/testkit/mariadbd"
)

// restartReport is the timeline of the database restart.
type restartReport struct {
	stopAt      time.Time // SIGTERM sent to mariadbd
	exitedAt    time.Time // mariadbd gone
	startAt     time.Time // mariadbd started again
	answeringAt time.Time // MariaDB answers a ping again
	readyAt     time.Time // the service's /readyz answers 200 again
	err         error     // the restart could not be completed
}

// window returns the restart window: from the stop to grace after MariaDB answers again
// (to the end of the run when it never did).
func (r *restartReport) window(grace time.Duration, runEnd time.Time) (from, to time.Time) {
	if r.answeringAt.IsZero() {
		return r.stopAt, runEnd
	}
	return r.stopAt, r.answeringAt.Add(grace)
}

// restartDatabase stops the run's MariaDB s for real (SIGTERM), keeps it down for outage,
// starts it again on the same port and data directory, waits until it answers and then until
// the service at base is ready again.
func restartDatabase(ctx context.Context, s *mariadbd.Server, outage time.Duration, base string) *restartReport {
	r := &restartReport{}
	log.Printf("stopping MariaDB (pid %d)", s.Pid())
	r.stopAt = time.Now()
	if r.err = s.Stop(); r.err != nil {
		return r
	}
	r.exitedAt = time.Now()
	if r.err = sleep(ctx, outage); r.err != nil {
		return r
	}
	log.Print("starting MariaDB")
	r.startAt = time.Now()
	if r.err = s.Start(ctx); r.err != nil {
		return r
	}
	r.answeringAt = time.Now()
	if err := waitStatus(ctx, base+"/readyz", 200, time.Minute); err != nil {
		r.err = fmt.Errorf("the service did not become ready again: %w", err)
		return r
	}
	r.readyAt = time.Now()
	log.Printf("MariaDB (pid %d) answers again after %v down; the service was ready %v later",
		s.Pid(), r.answeringAt.Sub(r.stopAt).Round(time.Millisecond), r.readyAt.Sub(r.answeringAt).Round(time.Millisecond))
	return r
}
