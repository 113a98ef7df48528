package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	"petstore/client"
)

// fakeStore stands in for the service in the example: it stores pets, pages them two at a
// time with Link rel="next", and answers its first create with 503 (the create is retried).
func fakeStore() *httptest.Server {
	var (
		mu    sync.Mutex
		names []string
		calls int
	)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-RateLimit-Limit", "60")
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(60-calls))
		switch {
		case r.Method == http.MethodPost && calls == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"code":"unavailable","message":"the database does not answer","status":503}`)
		case r.Method == http.MethodPost:
			names = append(names, "Rex")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":%d,"name":"Rex","categoryId":3,"status":"available"}`, len(names))
		default:
			after, _ := strconv.Atoi(r.URL.Query().Get("after"))
			end := min(after+2, len(names))
			if end < len(names) {
				w.Header().Set("Link", fmt.Sprintf(`</v1/pets?after=%d&limit=2>; rel="next"`, end))
			}
			fmt.Fprint(w, "[")
			for i := after; i < end; i++ {
				if i > after {
					fmt.Fprint(w, ",")
				}
				fmt.Fprintf(w, `{"id":%d,"name":%q,"categoryId":3}`, i+1, names[i])
			}
			fmt.Fprint(w, "]")
		}
	}))
}

func Example() {
	srv := fakeStore()
	defer srv.Close()
	ctx := context.Background()

	c, err := client.New(client.Config{BaseURL: srv.URL + "/v1", APIKey: "petstore_test_…"})
	if err != nil {
		panic(err)
	}
	for range 3 {
		// The first create is answered 503 and retried with the same Idempotency-Key.
		pet, err := c.CreatePet(ctx, client.NewPet{Name: "Rex", CategoryId: 3})
		if err != nil {
			panic(err)
		}
		fmt.Println("created", pet.Id, pet.Name)
	}
	for pet, err := range c.Pets(ctx, client.ListPetsParams{}) { // follows Link rel="next"
		if err != nil {
			panic(err)
		}
		fmt.Println("listed", pet.Id, pet.Name)
	}
	fmt.Println("requests left:", c.RateLimit().Remaining)
	// Output:
	// created 1 Rex
	// created 2 Rex
	// created 3 Rex
	// listed 1 Rex
	// listed 2 Rex
	// listed 3 Rex
	// requests left: 54
}
