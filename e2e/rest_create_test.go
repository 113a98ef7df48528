package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"petstore/models"
)

func TestCreateAndRead(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		names := []string{
			`Rex`, `O'Brien "the dog"`, `Robert'); DROP TABLE pets;--`, `🐶🐱 Müsli ñ 漢字`, `back\slash`,
			strings.Repeat("é", models.MaxNameLength), "  padded  ", "<script>alert(1)</script>",
		}
		for i, name := range names {
			body, _ := json.Marshal(map[string]any{"name": name, "categoryId": i + 1, "status": "pending", "id": 999, "extra": true})
			created := api.do(t, post("/v1/pets", string(body)))
			if created.status != http.StatusCreated {
				t.Fatalf("create %q: got %d %s; want 201", name, created.status, created.body)
			}
			pet := decodePet(t, created.body)
			want := models.Pet{ID: pet.ID, Name: name, CategoryID: int64(i + 1), Status: ptr(models.PetStatusPending)}
			if pet.ID == 999 || !samePet(pet, want) {
				t.Errorf("created: got %+v; want %+v with a service-assigned id", pet, want)
			}
			if loc := created.header.Get("Location"); loc != fmt.Sprintf("/v1/pets/%d", pet.ID) {
				t.Errorf("Location: got %q", loc)
			}
			fetched := api.do(t, get(fmt.Sprintf("/v1/pets/%d", pet.ID)))
			if fetched.status != 200 || fetched.body != created.body {
				t.Errorf("get: got %d %s; want 200 %s", fetched.status, fetched.body, created.body)
			}
		}
		list := api.do(t, get("/v1/pets?limit=100"))
		var pets []models.Pet
		if err := json.Unmarshal([]byte(list.body), &pets); err != nil || len(pets) != len(names) {
			t.Fatalf("list: got %s (%v); want %d pets", list.body, err, len(names))
		}
		for i, p := range pets {
			if p.Name != names[i] {
				t.Errorf("pet %d name: got %q; want %q", i, p.Name, names[i])
			}
		}
	})
}

func TestCreateOptionalStatusAndLimits(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		for _, tc := range []struct{ name, body, want string }{
			{"no status", `{"name":"A","categoryId":1}`, `{"id":1,"name":"A","categoryId":1}`},
			{"null status", `{"name":"B","categoryId":2,"status":null}`, `{"id":2,"name":"B","categoryId":2}`},
			{"largest categoryId", `{"name":"C","categoryId":9223372036854775807,"status":"sold"}`, `{"id":3,"name":"C","categoryId":9223372036854775807,"status":"sold"}`},
			{"charset parameter", `{"name":"D","categoryId":1,"status":"available"}`, `{"id":4,"name":"D","categoryId":1,"status":"available"}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req := post("/v1/pets", tc.body)
				req.header = http.Header{"Content-Type": {"application/json; charset=utf-8"}}
				got := api.do(t, req)
				if got.status != 201 || got.body != tc.want {
					t.Errorf("got %d %s; want 201 %s", got.status, got.body, tc.want)
				}
			})
		}
	})
}

func TestGetPetDeprecation(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1}`))
	for _, path := range []string{"/v1/pets/1", "/v1/pets/2", "/v1/pets/x"} {
		resp := api.do(t, get(path))
		for h, want := range map[string]string{
			"Deprecation": "@1767225600",
			"Sunset":      "Thu, 05 Dec 2030 00:00:00 GMT",
			"Link":        `</v1/pets>; rel="successor-version"`,
		} {
			if got := resp.header.Get(h); got != want {
				t.Errorf("%s %s: got %q; want %q", path, h, got, want)
			}
		}
	}
}

func decodePet(t *testing.T, body string) models.Pet {
	t.Helper()
	var p models.Pet
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("body %q is not a Pet: %v", body, err)
	}
	return p
}

func samePet(a, b models.Pet) bool {
	sa, sb := "", ""
	if a.Status != nil {
		sa = string(*a.Status)
	}
	if b.Status != nil {
		sb = string(*b.Status)
	}
	return a.ID == b.ID && a.Name == b.Name && a.CategoryID == b.CategoryID && sa == sb
}

func ptr[T any](v T) *T { return &v }
