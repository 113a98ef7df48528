package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestBackupRestore follows docs/operations.md, "Backup and restore": a database dumped with
// mariadb-dump --single-transaction while clients add pets with Idempotency-Key, restored into
// a new database with the mariadb client, the AUTO_INCREMENT of its pets and keys raised past
// every id handed out, and served by an instance started on it with PETSTORE_MIGRATE=off. The
// dump is one moment of the database: each pet added with an Idempotency-Key is there with its
// record or not at all, and every pet there is the source's. Keys made before the dump work,
// one made after is unknown, one revoked after works again; cursors handed out before work; a
// POST replayed with an Idempotency-Key of before the dump gets its first answer, one of after
// the dump makes a new pet; and a cursor handed out after the dump passes no pet added after
// the restore.
func TestBackupRestore(t *testing.T) {
	quiet(t)
	src := dbtest.DSN(t, migrations.MySQL)
	env := []string{"PETSTORE_DB=" + src}
	mustRun(t, env, "migrate", "up")
	key := lastLine(mustRun(t, env, "keys", "create", "--plan", "enterprise", "--per-minute", "1000000", "--per-day", "100000000"))
	revoked := mustRun(t, env, "keys", "create", "--plan", "free")
	srcDB := openRoot(t, src)
	if err := srcDB.Exec("INSERT INTO pets (name, category_id, status) SELECT CONCAT('seed ', seq), 1, 'available' FROM seq_1_to_20000").Error; err != nil {
		t.Fatal(err)
	}
	_, base, _ := startServe(t, env...)
	s := &liveServer{url: base, key: key}
	before := s.createPet(t, key, "idem-before", "", "Idempotency-Key", "before")
	var conn struct {
		PetsConnection struct{ PageInfo struct{ EndCursor string } }
	}
	graphQL(t, base, key, `{ petsConnection(first: 100) { pageInfo { endCursor } } }`, &conn)
	resp, _ := send(t, http.MethodGet, base+"/v1/pets?limit=100", key, "")
	next := nextLink.FindStringSubmatch(resp.Header.Get("Link"))
	if next == nil {
		t.Fatalf("GET /v1/pets?limit=100: no next link in %q", resp.Header.Get("Link"))
	}

	loaded, stop := idempotentLoad(base, key, 4)
	within(t, 10*time.Second, "the load under way", func() bool { return loaded() >= 20 })
	var dump bytes.Buffer
	cmd := mariadbClient(t, "mariadb-dump", src, "--single-transaction", "--hex-blob", "--default-character-set=utf8mb4", dbName(t, src))
	cmd.Stdout = &dump
	out := &bytes.Buffer{}
	cmd.Stderr = out
	err := cmd.Run()
	acked := stop()
	if err != nil {
		t.Fatalf("mariadb-dump: %v\n%s", err, out)
	}
	lost := lastLine(mustRun(t, env, "keys", "create", "--plan", "free"))
	mustRun(t, env, "keys", "revoke", regexp.MustCompile(`key (\d+) `).FindStringSubmatch(revoked)[1])
	after := s.createPet(t, key, "idem-after", "", "Idempotency-Key", "after")

	dst := dbtest.DSN(t, migrations.MySQL)
	restore := mariadbClient(t, "mariadb", dst, dbName(t, dst))
	restore.Stdin = &dump
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("mariadb < the dump: %v\n%s", err, out)
	}
	dstDB := openRoot(t, dst)
	for _, table := range []string{"pets", "api_keys"} {
		var maxID int64
		if err := srcDB.Raw("SELECT MAX(id) FROM " + table).Scan(&maxID).Error; err != nil {
			t.Fatal(err)
		}
		if err := dstDB.Exec(fmt.Sprintf("ALTER TABLE %s AUTO_INCREMENT = %d", table, maxID+1)).Error; err != nil {
			t.Fatal(err)
		}
	}
	restored := checkOneMoment(t, dstDB, dbName(t, src))
	t.Logf("%d pets added with an Idempotency-Key under load, %d of them in the dump", len(acked), restored)

	_, base, _ = startServe(t, "PETSTORE_DB="+dst, "PETSTORE_MIGRATE=off")
	s = &liveServer{url: base, key: key}
	for what, k := range map[string]struct {
		key  string
		want int
	}{"made before the dump": {key, http.StatusOK}, "made after": {lost, http.StatusUnauthorized}, "revoked after": {lastLine(revoked), http.StatusOK}} {
		if resp, body := send(t, http.MethodGet, base+"/v1/pets?limit=1", k.key, ""); resp.StatusCode != k.want {
			t.Errorf("a key %s: %d %s; want %d", what, resp.StatusCode, body, k.want)
		}
	}
	var page []struct{ ID int64 }
	if _, body := send(t, http.MethodGet, base+next[1], key, ""); json.Unmarshal(body, &page) != nil || len(page) != 100 || page[0].ID != 101 || page[99].ID != 200 {
		t.Errorf("the REST cursor of before the dump: %s; want pets 101 to 200", body)
	}
	graphQL(t, base, key, fmt.Sprintf(`{ petsConnection(first: 100, after: %q) { pageInfo { endCursor } } }`, conn.PetsConnection.PageInfo.EndCursor), &conn)
	if conn.PetsConnection.PageInfo.EndCursor != cursorOf(200) {
		t.Errorf("the GraphQL cursor of before the dump: the next page ends at %q; want pet 200's cursor", conn.PetsConnection.PageInfo.EndCursor)
	}
	for idem, want := range map[string]string{"before": fmt.Sprintf(`"id":%d,`, before), "after": ""} {
		resp, body := send(t, http.MethodPost, base+"/v1/pets", key, fmt.Sprintf(`{"name":"idem-%s","categoryId":1}`, idem), "Idempotency-Key", idem)
		replayed := resp.Header.Get("Idempotent-Replayed") == "true"
		if resp.StatusCode != http.StatusCreated || replayed != (want != "") || !strings.Contains(string(body), want) {
			t.Errorf("POST again with the Idempotency-Key of %s the dump: %d replayed=%v %s; want 201, replayed %v", idem, resp.StatusCode, replayed, body, want != "")
		}
	}
	newPet := s.createPet(t, key, "after the restore", "")
	if resp, body := send(t, http.MethodGet, base+"/v1/pets?limit=100&after="+url.QueryEscape(cursorOf(after)), key, ""); resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), fmt.Sprintf(`"id":%d,`, newPet)) {
		t.Errorf("the cursor of pet %d, added after the dump: %d %s; want pet %d, added after the restore", after, resp.StatusCode, body, newPet)
	}
}

// idempotentLoad starts workers that POST pets named idem-KEY with Idempotency-Key KEY to base
// until stop is called, which returns the keys acknowledged with 201; acked counts them so far.
func idempotentLoad(base, key string, workers int) (acked func() int, stop func() []string) {
	return loadUntil(workers, func(w, i int) (string, bool) {
		idem := fmt.Sprintf("load-%d-%d", w, i)
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/pets", strings.NewReader(`{"name":"idem-`+idem+`","categoryId":1}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", idem)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return idem, false
		}
		resp.Body.Close()
		return idem, resp.StatusCode == http.StatusCreated
	})
}

// checkOneMoment checks that the restored database dst holds one moment of the database
// srcName on the same server: every pet of dst is the source's, and a pet named idem-KEY is
// there exactly when the record of its Idempotency-Key KEY is there and done (a record still in
// flight at that moment has no pet yet). It returns how many such pets dst holds.
func checkOneMoment(t *testing.T, dst *store.DB, srcName string) int {
	t.Helper()
	var differ, orphans, idem int64
	if err := dst.Raw("SELECT COUNT(*) FROM pets d LEFT JOIN " + srcName + ".pets s ON s.id = d.id " +
		"WHERE s.id IS NULL OR s.name <> d.name OR s.category_id <> d.category_id OR NOT (s.status <=> d.status)").Scan(&differ).Error; err != nil {
		t.Fatal(err)
	}
	if err := dst.Raw("SELECT COUNT(*) FROM pets p LEFT JOIN idempotency_keys k ON CONCAT('idem-', k.idem_key) = p.name AND k.state = 'done' " +
		"WHERE p.name LIKE 'idem-%' AND k.idem_key IS NULL").Scan(&orphans).Error; err != nil {
		t.Fatal(err)
	}
	var records int64
	if err := dst.Raw("SELECT COUNT(*) FROM idempotency_keys k LEFT JOIN pets p ON p.name = CONCAT('idem-', k.idem_key) WHERE k.state = 'done' AND p.id IS NULL").Scan(&records).Error; err != nil {
		t.Fatal(err)
	}
	if err := dst.Raw("SELECT COUNT(*) FROM pets WHERE name LIKE 'idem-load-%'").Scan(&idem).Error; err != nil {
		t.Fatal(err)
	}
	if differ != 0 || orphans != 0 || records != 0 {
		t.Errorf("the restored database: %d pets not the source's, %d pets without their done Idempotency-Key record, %d done records without their pet; want none",
			differ, orphans, records)
	}
	return int(idem)
}

// openRoot opens the database dsn, closed when t ends.
func openRoot(t *testing.T, dsn string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dsn, store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// dbName returns the database name of dsn, a mysql:// PETSTORE_DB.
func dbName(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}
