package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"petstore/client"
)

// TestPetsFollowsNextLinks checks that the iterator walks every page through the Link
// rel="next" headers, keeps the filter and page size, and stops when the caller breaks.
func TestPetsFollowsNextLinks(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.Atoi(r.URL.Query().Get("after")) // 0 on the first page
		var header []string
		if after+2 < 5 {
			header = []string{"Link", fmt.Sprintf(`</v1/pets?after=%d&limit=2&status=sold>; rel="next", </v1/docs>; rel="help"`, after+2)}
		}
		body := "["
		for id := after + 1; id <= min(after+2, 5); id++ {
			if id > after+1 {
				body += ","
			}
			body += fmt.Sprintf(`{"id":%d,"name":"P%d","categoryId":1,"status":"sold"}`, id, id)
		}
		writeJSON(w, 200, body+"]", header...)
	})
	c := f.petStore(t, fast)
	limit, sold := 2, client.PetStatus("sold")
	var ids []int64
	for pet, err := range c.Pets(t.Context(), client.ListPetsParams{Limit: &limit, Status: &sold}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, pet.Id)
	}
	if fmt.Sprint(ids) != "[1 2 3 4 5]" {
		t.Errorf("ids: got %v; want [1 2 3 4 5]", ids)
	}
	seen := f.requests()
	want := []string{"limit=2&status=sold", "after=2&limit=2&status=sold", "after=4&limit=2&status=sold"}
	if len(seen) != len(want) {
		t.Fatalf("requests: got %+v; want %d", seen, len(want))
	}
	for i, q := range want {
		if got, _ := url.ParseQuery(seen[i].query); got.Encode() != q {
			t.Errorf("page %d query: got %q; want %q", i+1, seen[i].query, q)
		}
	}

	for range c.Pets(t.Context(), client.ListPetsParams{Limit: &limit}) {
		break
	}
	if n := len(f.requests()) - len(seen); n != 1 {
		t.Errorf("requests after breaking on the first pet: got %d; want 1", n)
	}
}

// TestPetsYieldsErrors checks that an error answer ends the iteration with that error.
func TestPetsYieldsErrors(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			writeJSON(w, 200, `[{"id":1,"name":"A","categoryId":1}]`, "Link", `</v1/pets?after=x>; rel="next"`)
			return
		}
		writeJSON(w, 400, errorBody("invalid_request", 400))
	})
	var ids []int64
	var errs []error
	for pet, err := range f.petStore(t, fast).Pets(t.Context(), client.ListPetsParams{}) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, pet.Id)
	}
	var apiErr *client.Error
	if len(ids) != 1 || len(errs) != 1 || !errors.As(errs[0], &apiErr) || apiErr.Status != 400 {
		t.Errorf("got ids %v and errors %v; want [1] and the 400", ids, errs)
	}
}

// TestRateLimitOfTheLastAnswer checks that RateLimit reports the headers of the last answer,
// an error answer's included.
func TestRateLimitOfTheLastAnswer(t *testing.T) {
	f := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		h := []string{"X-RateLimit-Limit", "60", "X-RateLimit-Remaining", strconv.Itoa(60 - n), "X-RateLimit-Reset", "1767225660",
			"RateLimit-Policy", `"minute";q=60;w=60, "day";q=1000;w=86400`, "RateLimit", fmt.Sprintf(`"minute";r=%d;t=13`, 60-n)}
		if n == 1 {
			writeJSON(w, 200, `[]`, h...)
			return
		}
		writeJSON(w, 429, errorBody("rate_limited", 429), append(h, "Retry-After", "300")...)
	})
	c := f.petStore(t, fast)
	if got := c.RateLimit(); got != (client.RateLimit{}) {
		t.Errorf("before any answer: got %+v; want the zero RateLimit", got)
	}
	_, _ = c.ListPets(t.Context(), client.ListPetsParams{})
	if got := c.RateLimit(); got.Limit != 60 || got.Remaining != 59 || got.RetryAfter != 0 {
		t.Errorf("after the 200: got %+v; want limit 60, 59 remaining", got)
	}
	_, _ = c.ListPets(t.Context(), client.ListPetsParams{})
	want := client.RateLimit{Limit: 60, Remaining: 58, Reset: time.Unix(1767225660, 0),
		Policy: `"minute";q=60;w=60, "day";q=1000;w=86400`, Current: `"minute";r=58;t=13`, RetryAfter: 300 * time.Second}
	if got := c.RateLimit(); got != want {
		t.Errorf("after the 429: got %+v; want %+v", got, want)
	}
}

// TestNewRefusesBadConfig checks New's checks of its settings.
func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []client.Config{{BaseURL: "api.petstore.example/v1", APIKey: "k"}, {BaseURL: "https://api.petstore.example/v1"}} {
		if _, err := client.New(cfg); err == nil {
			t.Errorf("New(%+v): got no error", cfg)
		}
	}
}
