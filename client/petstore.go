package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
)

// Config is what New needs to reach the service.
type Config struct {
	// BaseURL is the deployment's base address, ending in /v1, for example
	// "https://api.petstore.example/v1".
	BaseURL string

	// APIKey is sent as the bearer token of every request.
	APIKey string

	// HTTPClient sends the requests. Default: http.DefaultClient.
	HTTPClient HttpRequestDoer

	// Retry bounds the retries of each request; its zero value means the defaults.
	Retry RetryPolicy
}

// PetStore is a client of the pet store's REST API that retries, sends idempotency keys and
// tracks the rate limit as the package documentation describes. It is safe for concurrent
// use.
type PetStore struct {
	// API is the generated client, with every operation of the document, over the same
	// retries, keys and rate-limit tracking; use it for what the methods of PetStore do not
	// offer, such as the headers of an answer.
	API *ClientWithResponses

	transport *transport
}

// New returns a PetStore for cfg.
func New(cfg Config) (*PetStore, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: BaseURL %q: want an absolute http or https URL", cfg.BaseURL)
	}
	if cfg.APIKey == "" {
		return nil, errors.New("client: APIKey is empty")
	}
	doer := cfg.HTTPClient
	if doer == nil {
		doer = http.DefaultClient
	}
	t := &transport{next: doer, policy: cfg.Retry.withDefaults(), random: rand.Int64N}
	auth := "Bearer " + cfg.APIKey
	api, err := NewClientWithResponses(cfg.BaseURL, WithHTTPClient(t),
		WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", auth)
			return nil
		}))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &PetStore{API: api, transport: t}, nil
}

// RateLimit returns the rate-limit state that the last answer carrying one reported (the
// zero RateLimit before any), whichever operation or goroutine it answered.
func (c *PetStore) RateLimit() RateLimit { return c.transport.rateLimit() }

// CreatePet adds pet and returns it with the id the service assigned. Its attempts share one
// Idempotency-Key, so the animal is stored once however often it is retried.
func (c *PetStore) CreatePet(ctx context.Context, pet NewPet) (Pet, error) {
	resp, err := c.API.CreatePetWithResponse(ctx, nil, pet)
	if err != nil {
		return Pet{}, fmt.Errorf("client: createPet: %w", err)
	}
	if resp.JSON201 == nil {
		return Pet{}, answerError(resp.HTTPResponse, resp.Body)
	}
	return *resp.JSON201, nil
}

// Page is one page of a listing.
type Page struct {
	// Pets are the page's animals, ordered by id ascending.
	Pets []Pet
	// Next is the cursor of the next page, for ListPetsParams.After; "" on the last page.
	Next string
}

// ListPets returns one page of the animals that params select.
func (c *PetStore) ListPets(ctx context.Context, params ListPetsParams) (Page, error) {
	resp, err := c.API.ListPetsWithResponse(ctx, &params)
	if err != nil {
		return Page{}, fmt.Errorf("client: listPets: %w", err)
	}
	if resp.JSON200 == nil {
		return Page{}, answerError(resp.HTTPResponse, resp.Body)
	}
	page := Page{Pets: *resp.JSON200}
	if link := nextLink(resp.HTTPResponse.Header.Values("Link")); link != "" {
		next, err := url.Parse(link)
		if err != nil || next.Query().Get("after") == "" {
			return Page{}, fmt.Errorf("client: listPets: the next link %q has no after cursor", link)
		}
		page.Next = next.Query().Get("after")
	}
	return page, nil
}

// Pets iterates over all the animals that params select, page after page as the Link
// rel="next" header of each leads (params.Limit is the page size). An error ends the
// iteration: it is yielded once, with a zero Pet.
func (c *PetStore) Pets(ctx context.Context, params ListPetsParams) iter.Seq2[Pet, error] {
	return func(yield func(Pet, error) bool) {
		for {
			page, err := c.ListPets(ctx, params)
			if err != nil {
				yield(Pet{}, err)
				return
			}
			for _, pet := range page.Pets {
				if !yield(pet, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			if params.After != nil && *params.After == page.Next {
				yield(Pet{}, fmt.Errorf("client: listPets: the next link repeats the cursor %q", page.Next))
				return
			}
			params.After = &page.Next
		}
	}
}

// GetPet returns the animal with the given id.
//
// Deprecated: the service removes getPet on 5 December 2030; use Pets with a status filter.
func (c *PetStore) GetPet(ctx context.Context, id int64) (Pet, error) {
	resp, err := c.API.GetPetWithResponse(ctx, id)
	if err != nil {
		return Pet{}, fmt.Errorf("client: getPet: %w", err)
	}
	if resp.JSON200 == nil {
		return Pet{}, answerError(resp.HTTPResponse, resp.Body)
	}
	return *resp.JSON200, nil
}

// Error returns the answer's status, code and message. It makes *Error an error: PetStore's
// methods return one for each error answer of the service (use errors.As).
func (e *Error) Error() string {
	return fmt.Sprintf("petstore: %d %s: %s", e.Status, e.Code, e.Message)
}

// answerError returns the *Error of an answer that is not the operation's success: its
// Error body, or one made of its status when it has none (a proxy's answer, say).
func answerError(resp *http.Response, body []byte) error {
	var e Error
	if err := json.Unmarshal(body, &e); err != nil || e.Code == "" {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		e = Error{Message: msg}
	}
	e.Status = resp.StatusCode
	return &e
}
