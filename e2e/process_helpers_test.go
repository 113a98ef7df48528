package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/app"
	"petstore/models"
	"petstore/testkit/dbtest"
)

// runCmd runs the petstore command line with PETSTORE_DB=dsn and returns its stdout.
func runCmd(t *testing.T, dsn string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := app.Run(context.Background(), args, []string{"PETSTORE_DB=" + dsn}, &stdout, &stderr)
	return stdout.String(), err
}

// environ returns env in os.Environ's form, for app.Run.
func environ(env map[string]string) []string {
	var kvs []string
	for k, v := range env {
		kvs = append(kvs, k+"="+v)
	}
	return kvs
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// startServer runs `petstore serve` in process on a free port and returns its base address, the
// development key it printed, a stop function and the channel run's result arrives on.
// Settings in extra override the defaults.
func startServer(t *testing.T, extra ...string) (base, key string, stop context.CancelFunc, done <-chan error) {
	t.Helper()
	lines, stop, done := startServerLines(t, extra...)
	for _, line := range lines {
		if strings.HasPrefix(line, "petstore_test_") && key == "" {
			key = line
		}
		if addr, ok := strings.CutPrefix(line, "petstore listening on "); ok {
			base = strings.Fields(addr)[0]
		}
	}
	if base == "" || key == "" {
		stop()
		t.Fatalf("serve printed no address and key: %v", <-done)
	}
	return base, key, stop, done
}

// startServerLines runs `petstore serve` like startServer and returns the lines it printed up
// to the one with its address.
func startServerLines(t *testing.T, extra ...string) (lines []string, stop context.CancelFunc, done <-chan error) {
	t.Helper()
	env := map[string]string{"PETSTORE_ADDR": "127.0.0.1:0", "PETSTORE_DB": dbtest.DSN(t, "sqlite")}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- app.Run(ctx, []string{"serve"}, environ(env), pw, io.Discard)
		pw.Close()
	}()
	scanner := bufio.NewScanner(pr)
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
		if strings.HasPrefix(scanner.Text(), "petstore listening on ") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	t.Cleanup(cancel)
	return lines, cancel, errc
}

func waitHealthy(t testing.TB, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the server never became healthy")
}

// startServe runs this test binary as the service (serve) on a free loopback port, with env
// (the whole environment: os.Environ() and more, or only the settings that matter) and the
// listening address added; it is killed when t ends. It returns the process, the base address,
// once /healthz answers, and the development key printed on a first start in development ("" when
// none was). Being a process of its own, it leaves this one's globals (slog's default logger)
// alone, unlike startServer.
func startServe(t testing.TB, env ...string) (cmd *exec.Cmd, base, devKey string) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "serve")
	cmd.Env = append(env, "PETSTORE_TEST_AS_BINARY=1", "PETSTORE_ADDR=127.0.0.1:0")
	base, devKey = readStartup(t, bufio.NewScanner(startPiped(t, cmd)))
	waitHealthy(t, base)
	return cmd, base, devKey
}

// startPiped starts cmd, a process of this test binary, and returns its stdout; the process
// is killed when t ends.
func startPiped(t testing.TB, cmd *exec.Cmd) io.Reader {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return stdout
}

// readStartup reads the server's stdout up to the line with its base address, which it returns
// with the development key printed before it ("" when none was), and drains the rest.
func readStartup(t testing.TB, lines *bufio.Scanner) (base, devKey string) {
	t.Helper()
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "petstore_test_") && devKey == "" {
			devKey = lines.Text()
		}
		if addr, ok := strings.CutPrefix(lines.Text(), "petstore listening on "); ok {
			go func() {
				for lines.Scan() {
				}
			}()
			return strings.Fields(addr)[0], devKey
		}
	}
	t.Fatal("the server printed no address")
	return "", ""
}

// createPet creates a pet through client and returns its id and whether the answer closed the
// connection; an error for anything but a 201 with the pet.
func createPet(client *http.Client, base, key, name string) (id int64, closed bool, err error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/pets", strings.NewReader(`{"name":"`+name+`","categoryId":1}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, resp.Close, err
	}
	var pet models.Pet
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &pet) != nil {
		return 0, resp.Close, fmt.Errorf("got %d %s; want 201 with the pet", resp.StatusCode, body)
	}
	return pet.ID, resp.Close, nil
}

// postPet creates a pet and returns its id when the service acknowledged it with 201.
func postPet(base, key, name string) (int64, bool) {
	id, _, err := createPet(http.DefaultClient, base, key, name)
	return id, err == nil
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
