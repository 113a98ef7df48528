package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/app"
	"petstore/auth"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestPetAddedResume: with after, the pets added since come first from the database, then
// live ones, none twice; with concurrent writers none is skipped across the switch. A
// malformed cursor is INVALID_REQUEST.
func TestPetAddedResume(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
		var ids []int64
		for i := range 5 {
			ids = append(ids, s.createPet(t, s.key, fmt.Sprint("p", i), ""))
		}
		w := s.connect(t, s.key)
		w.subscribe("bad", `(after: "nope")`)
		if m := w.read(); !strings.Contains(string(m.Payload), "INVALID_REQUEST") || !strings.Contains(string(m.Payload), "cursor") {
			t.Fatalf("malformed cursor: %s %s; want INVALID_REQUEST about the cursor", m.Type, m.Payload)
		}
		_ = w.read() // complete
		first := petEvent{}
		w.subscribe("r", `(after: "`+cursorOf(ids[1])+`")`)
		// Writers add pets while the subscription pages through the database.
		done := make(chan []int64)
		go func() {
			var more []int64
			for i := range 20 {
				more = append(more, s.createPet(t, s.key, fmt.Sprint("q", i), ""))
			}
			done <- more
		}()
		var got []string
		for range 3 + 20 {
			ev := w.next("r")
			if first.Cursor == "" {
				first = ev
			}
			got = append(got, ev.Pet.ID)
		}
		more := <-done
		var want []string
		for _, id := range append(ids[2:], more...) {
			want = append(want, fmt.Sprint(id))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("resumed: got %v; want %v", got, want)
		}
		if first.Cursor != cursorOf(ids[2]) {
			t.Fatalf("cursor %q; want %q", first.Cursor, cursorOf(ids[2]))
		}
		if m, err := w.readErr(300 * time.Millisecond); err == nil {
			t.Fatalf("one more: %+v; want nothing", m)
		}
	})
}

// TestPetAddedResumeCharged: a resume pays for the pages it reads. A free key (60 requests a
// minute) resuming from the start of a catalogue of 6,100 pets gets the pages its budget pays
// for, 100 pets each, the subscribe operation paying for the first: over SSE (the request
// charged once) 60 pages, 6,000 pets; over a WebSocket (the upgrade and the subscribe
// message charged) 59 pages. Then the subscription ends with RATE_LIMITED, saying when to
// retry: an error event before complete on SSE, the protocol's error message of the operation
// on a WebSocket, whose connection stays open. Every pet sent carries its cursor, and the key's
// minute is spent.
func TestPetAddedResumeCharged(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
		start := insertPets(t, db, 6100)
		after := `(after: "` + cursorOf(start) + `")`
		perMinute := int(auth.Free.PerMinute)

		t.Run("sse", func(t *testing.T) {
			awayFromMinuteEdge(t)
			key := s.newKey(t, "free")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp := s.sseStream(t, ctx, key, after)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("stream: %d", resp.StatusCode)
			}
			var pets []petEvent
			var tail []string
			deadline := time.After(30 * time.Second)
			events := sseEvents(resp.Body)
		read:
			for {
				select {
				case e, ok := <-events:
					if !ok {
						break read
					}
					var p struct{ Data struct{ PetAdded *petEvent } }
					if data, isNext := strings.CutPrefix(e, "next "); isNext && json.Unmarshal([]byte(data), &p) == nil && p.Data.PetAdded != nil {
						pets = append(pets, *p.Data.PetAdded)
						continue
					}
					tail = append(tail, e)
				case <-deadline:
					t.Fatalf("the stream still runs after %d pets", len(pets))
				}
			}
			n := checkResumed(t, start, pets)
			t.Logf("%d pets, then %q", n, tail)
			if n != perMinute*100 || len(tail) != 2 || !strings.Contains(tail[0], "RATE_LIMITED") ||
				!strings.Contains(tail[0], "retry after") || tail[1] != "complete " {
				t.Fatalf("%d pets, then %q; want %d pets (%d pages), then a RATE_LIMITED error event saying when to retry, then complete",
					n, tail, perMinute*100, perMinute)
			}
			s.spentBudget(t, key)
		})

		t.Run("websocket", func(t *testing.T) {
			awayFromMinuteEdge(t)
			key := s.newKey(t, "free")
			c := s.connectKey(t, key) // the upgrade: 1 request
			c.subscribe("r", after)   // 1 request, the first page
			var pets []petEvent
			var end wsMsg
			for {
				m, ok := c.recv(30 * time.Second)
				if !ok {
					t.Fatalf("the subscription still runs after %d pets", len(pets))
				}
				var p struct{ Data struct{ PetAdded *petEvent } }
				if m.Type == "next" && m.ID == "r" && json.Unmarshal(m.Payload, &p) == nil && p.Data.PetAdded != nil {
					pets = append(pets, *p.Data.PetAdded)
					continue
				}
				end = m
				break
			}
			n := checkResumed(t, start, pets)
			t.Logf("%d pets, then %s %s %s", n, end.Type, end.ID, end.Payload)
			if want := (perMinute - 1) * 100; n != want || end.Type != "error" || end.ID != "r" ||
				!strings.Contains(string(end.Payload), "RATE_LIMITED") || !strings.Contains(string(end.Payload), "retry after") {
				t.Fatalf("%d pets, then %s %s %s; want %d pets (%d pages), then the error message of r: RATE_LIMITED, saying when to retry",
					n, end.Type, end.ID, end.Payload, want, perMinute-1)
			}
			c.refused("again", "RATE_LIMITED") // the connection stays open; its operations are charged
			s.spentBudget(t, key)
		})
	})
}

// insertPets adds n pets straight to the database, 500 to a statement, and returns the
// highest pet id before them.
func insertPets(t *testing.T, db *store.DB, n int) int64 {
	t.Helper()
	var before int64
	if err := db.DB.Raw("SELECT COALESCE(MAX(id), 0) FROM pets").Scan(&before).Error; err != nil {
		t.Fatal(err)
	}
	for done := 0; done < n; done += 500 {
		var b strings.Builder
		b.WriteString("INSERT INTO pets (name, category_id, status) VALUES ")
		for i := done; i < min(done+500, n); i++ {
			if i > done {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "('bulk%d', 1, 'available')", i)
		}
		if err := db.DB.Exec(b.String()).Error; err != nil {
			t.Fatal(err)
		}
	}
	return before
}

// checkResumed checks the pets of a resume from after, in order, each with its cursor, and
// returns how many there were.
func checkResumed(t *testing.T, after int64, pets []petEvent) int {
	t.Helper()
	last := after
	for _, p := range pets {
		id, err := strconv.ParseInt(p.Pet.ID, 10, 64)
		if err != nil || id <= last || p.Cursor != cursorOf(id) {
			t.Fatalf("pet %+v after %d; want the next pet with its cursor", p, last)
		}
		last = id
	}
	return len(pets)
}

// spentBudget checks that key has spent its minute: a REST list request gets 429 with nothing
// remaining.
func (s *liveServer) spentBudget(t *testing.T, key string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/pets?limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("a list request after the resume: %d, %s remaining; want 429 with none", resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining"))
	}
}
