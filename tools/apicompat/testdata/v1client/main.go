// Command v1client is written against the client that oapi-codegen generates from the
// published v1 document (rest/openapi/published/v1.json), as a user of the API writes it: every
// operation, its parameters, its answers and their headers. TestGeneratedClientCompiles builds
// it against the client generated from the current document, where it must compile unchanged.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"strings"

	"v1client/client"
)

func main() {
	bearer := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer petstore_test_...")
		return nil
	}
	var c client.ClientWithResponsesInterface
	c, err := client.NewClientWithResponses("http://localhost:8080/v1",
		client.WithHTTPClient(http.DefaultClient), client.WithRequestEditorFn(bearer))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	status, limit := client.Available, client.Limit(10)
	params := client.ListPetsParams{Limit: &limit, Status: &status}
	for {
		page, err := c.ListPetsWithResponse(ctx, &params)
		if err != nil {
			log.Fatal(err)
		}
		if page.JSON400 != nil || page.JSON401 != nil || page.JSON429 != nil || page.JSON500 != nil || page.JSON503 != nil {
			log.Fatal(page.Status())
		}
		for _, pet := range *page.JSON200 {
			fmt.Println(pet.Id, pet.Name, pet.CategoryId, pet.Status)
		}
		h := page.Headers200
		fmt.Println(h.XRateLimitLimit, h.XRateLimitRemaining, h.XRateLimitReset, h.RateLimit, h.RateLimitPolicy)
		if h.Link == nil {
			break
		}
		// </v1/pets?after=CURSOR&limit=10&status=available>; rel="next"
		next, err := url.Parse(strings.Trim(strings.SplitN(*h.Link, ";", 2)[0], "<> "))
		if err != nil {
			log.Fatal(err)
		}
		cursor := client.After(next.Query().Get("after"))
		params.After = &cursor
	}

	key := client.IdempotencyKey("8e03978e-40d5-43e8-bc93-6894a57f9324")
	sold := client.Sold
	created, err := c.CreatePetWithResponse(ctx, &client.CreatePetParams{IdempotencyKey: &key},
		client.CreatePetJSONRequestBody{Name: "Rex", CategoryId: 3, Status: &sold})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range []*client.Error{created.JSON400, created.JSON401, created.JSON409, created.JSON413,
		created.JSON415, created.JSON422, created.JSON429, created.JSON500, created.JSON503} {
		if e != nil && e.Code == client.ErrorCodeIdempotencyKeyReused {
			log.Fatal(e.Status, e.Message)
		}
	}
	pet := created.JSON201
	fmt.Println(pet.Id, created.Headers201.IdempotentReplayed, created.Headers201.XRateLimitRemaining)

	got, err := c.GetPetWithResponse(ctx, pet.Id)
	if err != nil {
		log.Fatal(err)
	}
	if got.JSON404 != nil {
		log.Fatal(got.JSON404.Message)
	}
	fmt.Println(got.JSON200.Name, got.Headers200.Deprecation, got.Headers200.Sunset, got.Headers200.Link)

	orders, err := c.ListOrdersWithResponse(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if orders.JSON501 != nil {
		fmt.Println(orders.StatusCode(), orders.JSON501.Code)
	}
}
