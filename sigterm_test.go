package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"petstore/internal/dbtest"
	"petstore/models"
	"petstore/store"
)

// TestMain lets the test binary act as the petstore binary, so that a test can run the real
// program as a child process and send it real signals.
func TestMain(m *testing.M) {
	if os.Getenv("PETSTORE_TEST_AS_BINARY") == "1" {
		main()
		return
	}
	// Tests and benchmarks log only failures: a line per request would drown their output.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	os.Exit(m.Run())
}

// TestSIGTERMUnderLoad runs the service as a process, drives it with concurrent POSTs, sends
// SIGTERM mid-load, and checks that the process exits cleanly within the drain timeout and that
// every 201 a client saw is in the database.
func TestSIGTERMUnderLoad(t *testing.T) {
	dsn := dbtest.DSN(t, "sqlite")
	out, err := runCmd(t, dsn, "keys", "create", "--plan", "enterprise", "--per-minute", "1000000", "--per-day", "100000000")
	if err != nil {
		t.Fatal(err)
	}
	key := lastLine(out)
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), "PETSTORE_TEST_AS_BINARY=1", "PETSTORE_DB="+dsn, "PETSTORE_ADDR=127.0.0.1:0",
		"PETSTORE_ENV=development", "PETSTORE_SHUTDOWN_TIMEOUT=5s", "PETSTORE_LOG_LEVEL=error")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	base := readStartup(t, bufio.NewScanner(stdout))
	waitHealthy(t, base)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var acked []int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				id, ok := postPet(base, key, fmt.Sprintf("w%d-%d", w, i))
				if ok {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit within the drain timeout")
	}
	cancel()
	wg.Wait()

	db, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored []models.Pet
	if err := db.Find(&stored).Error; err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for _, p := range stored {
		have[p.ID] = true
	}
	for _, id := range acked {
		if !have[id] {
			t.Errorf("pet %d was acknowledged with 201 but is not stored", id)
		}
	}
	if len(acked) == 0 {
		t.Error("no request was acknowledged before the signal")
	}
	t.Logf("%d writes acknowledged before and during shutdown, %d stored", len(acked), len(stored))
}

// readStartup reads the server's base address from its stdout, and drains the rest.
func readStartup(t *testing.T, lines *bufio.Scanner) string {
	t.Helper()
	for lines.Scan() {
		if addr, ok := strings.CutPrefix(lines.Text(), "petstore listening on "); ok {
			go func() {
				for lines.Scan() {
				}
			}()
			return strings.Fields(addr)[0]
		}
	}
	t.Fatal("the server printed no address")
	return ""
}

// postPet creates a pet and returns its id when the service acknowledged it with 201.
func postPet(base, key, name string) (int64, bool) {
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/pets", strings.NewReader(`{"name":"`+name+`","categoryId":1}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var pet models.Pet
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&pet) != nil {
		return 0, false
	}
	return pet.ID, true
}
