package rest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/internal/jsonbody"

	"petstore/auth"
)

// FuzzListParams checks that any query string either parses into values that say what it
// said, or is refused with an invalid_request error; never a panic or another error; and that
// the link to the next page keeps the parameters.
func FuzzListParams(f *testing.F) {
	for _, seed := range []string{"", "limit=5", "limit=0", "limit=abc", "status=sold", "status=SOLD", "limit=1&limit=2",
		"limit=%zz", "limit=99999999999999999999", "status=available&limit=100", "limit=+5", "limit=-0", ";", "status=",
		"limit=5&status=pending&after=xyz", "limit=%E2%82%AC"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		lq, err := listParams(raw)
		limit, status := lq.limit, lq.status
		if err != nil {
			if e := new(apierr.Error); !errors.As(err, &e) || e.Code != apierr.InvalidRequest {
				t.Fatalf("listParams(%q): got error %v; want invalid_request", raw, err)
			}
			return
		}
		if limit != nil && !strings.Contains(raw, "limit=") {
			t.Fatalf("listParams(%q): got limit %d from a query without one", raw, *limit)
		}
		if status != nil && !status.IsValid() {
			t.Fatalf("listParams(%q): got invalid status %q", raw, *status)
		}
		// The next page's link, with raw as its cursor, is what url.Values.Encode writes.
		q := url.Values{"after": {raw}}
		if limit != nil {
			q.Set("limit", strconv.Itoa(*limit))
		}
		if status != nil {
			q.Set("status", string(*status))
		}
		if got, want := lq.nextLink(raw), "</v1/pets?"+q.Encode()+`>; rel="next"`; len(got) != 1 || got[0] != want {
			t.Fatalf("listParams(%q).nextLink: got %q; want %q", raw, got, want)
		}
	})
}

// FuzzDecodeNewPet checks that any body either decodes into a NewPet that JSON carried
// exactly, or is refused with a 4xx error; never a panic or a 5xx.
func FuzzDecodeNewPet(f *testing.F) {
	for _, seed := range []string{` { "status" : "pending" ,"categoryId":-5, "name":"Ré 🐶" } `, `{}`, `{"categoryId":01}`,
		`{"categoryId":1,}`, `{"name":"a\u0041"}`, `{"status":"Sold"}`, `{"categoryId":2,"categoryId":2}`, "{\"name\":\"a\tb\"}", `{"name":"Rex","categoryId":1}`, `{"name":"Rex","categoryId":1,"status":"sold"}`,
		`{"name":null,"categoryId":null,"status":null}`, `{"categoryId":1e3}`, `{"categoryId":"3"}`, `[]`, `null`, ``, `{`,
		`{"name":"\ud83d\udc36","categoryId":9223372036854775807}`, `{"categoryId":9223372036854775808}`, `{"name":"a"} x`,
		`{"name":"a","name":"b","categoryId":2}`, `{"id":5,"name":"x","categoryId":3,"extra":[1,{"a":null}]}`, "{\"name\":\"\xff\"}"} {
		f.Add(seed, "application/json")
	}
	f.Add(`{"name":"Rex","categoryId":1}`, "text/plain")
	f.Add(`{"name":"Rex","categoryId":1}`, "application/json; charset=utf-8")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		r := httptest.NewRequest(http.MethodPost, "/v1/pets", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, jsonbody.MaxBytes)
		pet, err := decodeNewPet(r)
		if err != nil {
			if s := apierr.From(err).Status(); s < 400 || s > 499 {
				t.Fatalf("decodeNewPet(%q): got status %d (%v); want a 4xx", body, s, err)
			}
			return
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &raw); err != nil {
			t.Fatalf("decodeNewPet accepted %q, which is not a JSON object: %v", body, err)
		}
		if c, ok := raw["categoryId"]; ok && string(c) != "null" && strconv.FormatInt(pet.CategoryID, 10) != string(c) {
			t.Fatalf("categoryId: got %d from %s", pet.CategoryID, c)
		}
		if pet.Status != nil && !pet.Status.IsValid() {
			t.Fatalf("status: got invalid %q", *pet.Status)
		}
		var name *string
		_ = json.Unmarshal(raw["name"], &name)
		if name != nil && *name != pet.Name {
			t.Fatalf("name: got %q; want %q", pet.Name, *name)
		}
	})
}

// TestPanicIsInternalError checks that a handler's panic becomes a 500 Error body that tells
// nothing of the panic.
func TestPanicIsInternalError(t *testing.T) {
	r := NewRouter(Deps{
		Resolver: nil,
		GraphQL:  http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("secret detail") }),
		Identify: func(c *gin.Context) {
			c.Request = c.Request.WithContext(auth.NewContext(c.Request.Context(), &auth.Principal{KeyID: 1, Plan: auth.Free}))
		},
	})
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/graphql", strings.NewReader(`{}`)))
	var body apierr.Body
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	if rec.Code != 500 || body.Code != apierr.Internal || body.Status != 500 || strings.Contains(rec.Body.String(), "secret") {
		t.Errorf("got %d %s; want 500 internal_error without the panic's text", rec.Code, rec.Body)
	}
}

// BenchmarkDecodeNewPet measures the reading of a typical POST /v1/pets body.
func BenchmarkDecodeNewPet(b *testing.B) {
	const body = `{"name":"Rex","categoryId":3,"status":"available"}`
	r := httptest.NewRequest(http.MethodPost, "/v1/pets", nil)
	r.Header.Set("Content-Type", "application/json")
	b.ReportAllocs()
	for b.Loop() {
		r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
		if _, err := decodeNewPet(r); err != nil {
			b.Fatal(err)
		}
	}
}
