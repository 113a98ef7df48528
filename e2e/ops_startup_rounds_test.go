package e2e

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// roundStartWithin is how long an instance of a round may take to start: far more than a
// start takes (a second or two on Galera), far less than the 5 minutes a waiter gives a
// migration that another instance left behind.
const roundStartWithin = 60 * time.Second

// startRounds starts, rounds times, one `petstore serve` process per address that fresh gives
// at once (fresh makes a new, empty database for each round and returns every instance's
// PETSTORE_DB for it, and an admin's). In each round every instance must start within
// roundStartWithin and answer /readyz with 200, the migrations must be recorded once each,
// one development key made, and no migration lock left behind. A round that fails is reported
// and the next one run, so that the failures of many rounds are counted.
func startRounds(t *testing.T, rounds int, fresh func(t *testing.T, round int) (dsns []string, admin string)) {
	failed, instances := 0, 0
	for round := range rounds {
		dsns, admin := fresh(t, round)
		instances = len(dsns)
		if errs := startRound(t, dsns, admin); len(errs) > 0 {
			failed++
			t.Errorf("round %d of %d: %v", round+1, rounds, errors.Join(errs...))
		}
	}
	t.Logf("%d rounds of %d instances started together: %d failed", rounds, instances, failed)
}

// roundsSetting returns the number of rounds that the variable name asks for, else def.
func roundsSetting(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s: want a positive number of rounds; got %q", name, v)
	}
	return n
}

// startRound starts one instance per dsn at once and returns what went wrong.
func startRound(t *testing.T, dsns []string, admin string) []error {
	var (
		mu      sync.Mutex
		errs    []error
		devKeys int
		wg      sync.WaitGroup
		cmds    = make([]*exec.Cmd, len(dsns))
	)
	defer func() { // the round's database is dropped next
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	for i, dsn := range dsns {
		wg.Go(func() {
			cmd, base, devKey, err := startWithin(t, dsn)
			cmds[i] = cmd
			if err == nil {
				err = readyz(base)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, errors.New("instance "+strconv.Itoa(i+1)+": "+err.Error()))
			}
			if devKey != "" {
				devKeys++
			}
		})
	}
	wg.Wait()
	if devKeys != 1 {
		errs = append(errs, errors.New("development keys printed: "+strconv.Itoa(devKeys)+"; want 1"))
	}
	return append(errs, checkStarted(admin)...)
}

// startWithin starts `petstore serve` on dsn as a process of this test binary and returns it
// with its base address and the development key it printed once it has printed its address,
// or an error when it has not within roundStartWithin (it is killed then); the error ends with
// what the instance logged.
func startWithin(t *testing.T, dsn string) (cmd *exec.Cmd, base, devKey string, err error) {
	cmd = exec.Command(os.Args[0], "serve")
	cmd.Env = []string{"PETSTORE_TEST_AS_BINARY=1", "PETSTORE_ADDR=127.0.0.1:0", "PETSTORE_DB=" + dsn}
	logs := new(lockedBuffer)
	cmd.Stderr = logs
	lines := bufio.NewScanner(startPiped(t, cmd))
	started := make(chan struct{})
	go func() {
		defer close(started)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "petstore_test_") && devKey == "" {
				devKey = lines.Text()
			}
			if addr, ok := strings.CutPrefix(lines.Text(), "petstore listening on "); ok {
				base = strings.Fields(addr)[0]
				go func() {
					for lines.Scan() {
					}
				}()
				return
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(roundStartWithin):
		_ = cmd.Process.Kill()
		<-started
		_ = cmd.Wait()
		return cmd, "", "", errors.New("not started within " + roundStartWithin.String() + "; its log:\n" + logs.String())
	}
	if base == "" {
		_ = cmd.Wait()
		return cmd, "", "", errors.New("exited before it served; its log:\n" + logs.String())
	}
	return cmd, base, devKey, nil
}

// readyz checks that the instance at base answers /readyz with 200.
func readyz(base string) error {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("/readyz answered " + resp.Status)
	}
	return nil
}

// checkStarted checks the database at admin after a round: each migration recorded once, one
// key, and no migration lease left (on Galera; elsewhere there is no lease table).
func checkStarted(admin string) []error {
	db, err := store.Open(context.Background(), admin, store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		return []error{err}
	}
	defer db.Close()
	var errs []error
	var versions, rows, keys, leases int64
	if err := db.Raw("SELECT COUNT(DISTINCT version_id), COUNT(*) FROM goose_db_version").Row().Scan(&versions, &rows); err != nil {
		errs = append(errs, err)
	} else if want := int64(shippedMigrations()) + 1; versions != want || rows != want { // 0 (goose's own) and each migration
		errs = append(errs, errors.New("goose_db_version: "+strconv.FormatInt(rows, 10)+" rows of "+
			strconv.FormatInt(versions, 10)+" versions; want "+strconv.FormatInt(want, 10)+" of each"))
	}
	if err := db.Raw("SELECT COUNT(*) FROM api_keys").Scan(&keys).Error; err != nil {
		errs = append(errs, err)
	} else if keys != 1 {
		errs = append(errs, errors.New("api_keys: "+strconv.FormatInt(keys, 10)+" rows; want 1"))
	}
	if err := db.Raw("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'petstore_locks'").Scan(&leases).Error; err != nil {
		errs = append(errs, err)
	} else if leases > 0 {
		if err := db.Raw("SELECT COUNT(*) FROM petstore_locks WHERE name = 'petstore-migrate'").Scan(&leases).Error; err != nil || leases != 0 {
			errs = append(errs, errors.New("the migration lease was left behind"))
		}
	}
	return errs
}

// TestStartTogetherRounds starts three instances at once on a fresh MySQL database, in
// rounds (PETSTORE_TEST_START_ROUNDS, 3 by default): each starts and is ready, one migrates,
// one development key is made.
func TestStartTogetherRounds(t *testing.T) {
	startRounds(t, roundsSetting(t, "PETSTORE_TEST_START_ROUNDS", 3), func(t *testing.T, _ int) ([]string, string) {
		dsn := dbtest.DSN(t, migrations.MySQL)
		return []string{dsn, dsn, dsn}, dsn
	})
}
