package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"petstore/models"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestSIGTERMUnderLoad runs the service as a process, drives it with concurrent POSTs, sends
// SIGTERM mid-load, and checks the shutdown sequence: /readyz turns 503 at once while requests,
// on new connections too, are still served for the drain delay with Connection: close; then the
// process exits cleanly within the drain timeout, every 201 a client saw is in the database and
// nothing else is.
func TestSIGTERMUnderLoad(t *testing.T) {
	const drainDelay = time.Second
	dsn := dbtest.DSN(t, "sqlite")
	out, err := runCmd(t, dsn, "keys", "create", "--plan", "enterprise", "--per-minute", "1000000", "--per-day", "100000000")
	if err != nil {
		t.Fatal(err)
	}
	key := lastLine(out)
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), "PETSTORE_TEST_AS_BINARY=1", "PETSTORE_DB="+dsn, "PETSTORE_ADDR=127.0.0.1:0",
		"PETSTORE_ENV=development", "PETSTORE_SHUTDOWN_TIMEOUT=5s", "PETSTORE_LOG_LEVEL=error",
		"PETSTORE_DRAIN_DELAY="+drainDelay.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	base, _ := readStartup(t, bufio.NewScanner(stdout))
	waitHealthy(t, base)

	stopLoad := startLoad(base, key, 8)
	time.Sleep(300 * time.Millisecond)
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	late := checkDraining(t, base, key)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(drainDelay + 10*time.Second):
		t.Fatal("the process did not exit within the drain delay and timeout")
	}
	if took := time.Since(signalled); took < drainDelay {
		t.Errorf("exit %v after SIGTERM; want the drain delay, %v, first", took, drainDelay)
	}
	acked := append(stopLoad(), late)
	if len(acked) == 1 {
		t.Error("no request was acknowledged before the signal")
	}
	stored := storedPets(t, dsn)
	checkAcked(t, acked, stored)
	t.Logf("%d writes acknowledged before and during shutdown, %d stored", len(acked), len(stored))
}

// checkDraining checks, right after SIGTERM, that /readyz answers 503 while a POST on a new
// connection is still created, and that both answers close their connection. It returns the id
// of that pet.
func checkDraining(t *testing.T, base, key string) int64 {
	t.Helper()
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatalf("/readyz during the drain delay: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			if !resp.Close {
				t.Error("/readyz 503: got no Connection: close")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after SIGTERM: got %d; want 503 within 500ms", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	client := &http.Client{Transport: &http.Transport{}} // a connection of its own
	defer client.CloseIdleConnections()
	id, closed, err := createPet(client, base, key, "late")
	if err != nil || !closed {
		t.Errorf("POST during the drain delay: got id %d, Connection: close %v, err %v; want a 201 that closes", id, closed, err)
	}
	return id
}

// startLoad starts workers that POST pets to base until the returned function is called; it
// returns the ids of the pets acknowledged with 201.
func startLoad(base, key string, workers int) (stop func() []int64) {
	_, stop = loadUntil(workers, func(w, i int) (int64, bool) {
		return postPet(base, key, fmt.Sprintf("w%d-%d", w, i))
	})
	return stop
}

// loadUntil starts workers, each calling post(w, i) for i = 0, 1, ... until stop is called,
// which returns the values of the calls that reported ok; acked counts them so far.
func loadUntil[T any](workers int, post func(w, i int) (T, bool)) (acked func() int, stop func() []T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var values []T
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				if v, ok := post(w, i); ok {
					mu.Lock()
					values = append(values, v)
					mu.Unlock()
				}
			}
		})
	}
	acked = func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(values)
	}
	return acked, func() []T {
		cancel()
		wg.Wait()
		return values
	}
}

// storedPets returns the ids of every pet in the database dsn.
func storedPets(t *testing.T, dsn string) []int64 {
	t.Helper()
	db, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []int64
	if err := db.Model(&models.Pet{}).Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	return ids
}

// checkAcked checks that the pets acknowledged with 201 and the pets stored are the same.
func checkAcked(t *testing.T, acked, stored []int64) {
	t.Helper()
	have := map[int64]bool{}
	for _, id := range stored {
		have[id] = true
	}
	for _, id := range acked {
		if !have[id] {
			t.Errorf("pet %d was acknowledged with 201 but is not stored", id)
		}
		delete(have, id)
	}
	for id := range have {
		t.Errorf("pet %d is stored but no client saw its 201", id)
	}
}
