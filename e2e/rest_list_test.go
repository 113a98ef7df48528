package e2e

import (
	"encoding/json"
	"fmt"
	"testing"

	"petstore/models"
)

func TestList(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		statuses := []string{"available", "pending", "sold"}
		for i := range 30 {
			body := fmt.Sprintf(`{"name":"pet%d","categoryId":1,"status":%q}`, i, statuses[i%3])
			if i%5 == 4 {
				body = fmt.Sprintf(`{"name":"pet%d","categoryId":1}`, i)
			}
			if r := api.do(t, post("/v1/pets", body)); r.status != 201 {
				t.Fatalf("seed: got %d %s", r.status, r.body)
			}
		}
		for _, tc := range []struct {
			path   string
			count  int
			status string
		}{
			{"/v1/pets", 20, ""},
			{"/v1/pets?limit=1", 1, ""},
			{"/v1/pets?limit=100", 30, ""},
			{"/v1/pets?status=sold&limit=100", 8, "sold"},
			{"/v1/pets?status=available", 8, "available"},
			{"/v1/pets?limit=3&status=pending", 3, "pending"},
		} {
			t.Run(tc.path, func(t *testing.T) {
				resp := api.do(t, get(tc.path))
				var pets []models.Pet
				if err := json.Unmarshal([]byte(resp.body), &pets); err != nil || resp.status != 200 {
					t.Fatalf("got %d %s", resp.status, resp.body)
				}
				if len(pets) != tc.count {
					t.Errorf("count: got %d; want %d", len(pets), tc.count)
				}
				for i, p := range pets {
					if i > 0 && p.ID <= pets[i-1].ID {
						t.Errorf("not ordered by id: %d after %d", p.ID, pets[i-1].ID)
					}
					if tc.status != "" && (p.Status == nil || string(*p.Status) != tc.status) {
						t.Errorf("pet %d status: got %v; want %s", p.ID, p.Status, tc.status)
					}
				}
			})
		}
	})
}
