package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"

	"petstore/apierr"
	"petstore/models"
)

// stubRoot answers pets with its pets and error, or panics.
type stubRoot struct {
	pets   []*models.Pet
	err    error
	panics bool
}

func (s *stubRoot) Mutation() MutationResolver         { return nil }
func (s *stubRoot) Query() QueryResolver               { return stubQuery{s} }
func (s *stubRoot) Subscription() SubscriptionResolver { return nil }

type stubQuery struct{ *stubRoot }

func (q stubQuery) Pets(context.Context, *int, *models.PetStatus) ([]*models.Pet, error) {
	if q.panics {
		panic("boom")
	}
	return q.pets, q.err
}

func (q stubQuery) PetsConnection(context.Context, *int, *string, *models.PetStatus) (*PetConnection, error) {
	return nil, apierr.Invalid("not here")
}

func (q stubQuery) Pet(context.Context, int64) (*models.Pet, error) {
	return nil, apierr.Invalid("not here")
}

// runQuery runs query with vars on es through an executor with root field and field
// middleware, and returns the first response as JSON with what the middleware saw, and
// whether the second response is the end of the stream.
func runQuery(es graphql.ExecutableSchema, query string, vars map[string]any) (out string, ended bool) {
	var seen strings.Builder
	exec := executor.New(es)
	exec.SetRecoverFunc(recoverPanic)
	exec.SetErrorPresenter(presentError)
	exec.AroundRootFields(func(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
		rc := graphql.GetRootFieldContext(ctx)
		fmt.Fprintf(&seen, "root %s %s %v;", rc.Object, rc.Field.Alias, graphql.GetFieldContext(ctx).Object)
		return next(ctx)
	})
	exec.AroundFields(func(ctx context.Context, next graphql.Resolver) (any, error) {
		fc := graphql.GetFieldContext(ctx)
		args, _ := json.Marshal(fc.Args)
		fmt.Fprintf(&seen, "field %s %s %s %v %v;", fc.Object, fc.Path(), args, fc.IsResolver, fc.Parent.Object)
		res, err := next(ctx)
		fmt.Fprintf(&seen, "got %T %v;", res, err)
		return res, err
	})
	ctx := graphql.StartOperationTrace(context.Background())
	oc, errs := exec.CreateOperationContext(ctx, &graphql.RawParams{Query: query, Variables: vars})
	if errs != nil {
		return "refused", true
	}
	h, ctx := exec.DispatchOperation(ctx, oc)
	resp := h(ctx)
	b, err := json.Marshal(resp)
	if err != nil {
		panic(err)
	}
	return string(b) + " " + seen.String(), h(ctx) == nil
}

// FuzzLonePets checks that lonePetsSchema answers any query, with any pets, a nil pet, an
// error or a panic of the resolver, as the generated Exec answers it.
func FuzzLonePets(f *testing.F) {
	for _, q := range []string{
		"{ pets(limit: 20) { id name categoryId status } }",
		"{ a: pets { __typename name name } }",
		"query Q($n: Int) { pets(limit: $n) { id } }",
		"{ pets { id } __typename }",
		"{ pets @include(if: true) { id } }",
		"{ pets { ... on Pet { id } } }",
		"{ pets { id @skip(if: false) } }",
		"{ pets { id ... @defer { name } } }",
		"{ petsConnection { edges { node { id } } } }",
	} {
		f.Add(q, uint8(2), uint8(255), false, false, "Rex")
	}
	f.Add("{ pets { name } }", uint8(3), uint8(1), false, false, "<\xff\"")
	f.Add("{ pets { name } }", uint8(1), uint8(255), true, false, "x")
	f.Add("{ pets { name } }", uint8(1), uint8(255), false, true, "x")
	f.Fuzz(func(t *testing.T, query string, n, nilAt uint8, fails, panics bool, name string) {
		root := &stubRoot{panics: panics}
		if fails {
			root.err = apierr.Invalid("limit must be between 1 and 100")
		}
		sold := models.PetStatusSold
		for i := range int(n % 5) {
			if i == int(nilAt) {
				root.pets = append(root.pets, nil)
				continue
			}
			root.pets = append(root.pets, &models.Pet{ID: int64(i + 1), Name: name, CategoryID: 3, Status: &sold})
		}
		generic := NewExecutableSchema(Config{Resolvers: root})
		var vars map[string]any
		if strings.Contains(query, "$n") {
			vars = map[string]any{"n": 20}
		}
		want, wantEnded := runQuery(generic, query, vars)
		got, gotEnded := runQuery(lonePetsSchema{generic.(*executableSchema)}, query, vars)
		if got != want || gotEnded != wantEnded {
			t.Fatalf("%s:\nlone    %s (ended %v)\ngeneric %s (ended %v)", query, got, gotEnded, want, wantEnded)
		}
	})
}

// TestLonePetsTaken checks which operations lonePetsSchema runs itself.
func TestLonePetsTaken(t *testing.T) {
	es := NewExecutableSchema(Config{Resolvers: &stubRoot{}})
	for query, want := range map[string]bool{
		"{ pets(limit: 20) { id name categoryId status } }":                  true,
		"query Q($n: Int) { a: pets(limit: $n) { id id } }":                  true,
		"{ pets { id } __typename }":                                         false,
		"{ pets @include(if: true) { id } }":                                 false,
		"{ pets { ... on Pet { id } } }":                                     false,
		"{ pets { id @skip(if: false) } }":                                   false,
		"mutation { createPet(input: {name: \"a\", categoryId: 1}) { id } }": false,
	} {
		oc, errs := executor.New(es).CreateOperationContext(graphql.StartOperationTrace(context.Background()), &graphql.RawParams{Query: query})
		if errs != nil {
			t.Fatalf("%s: %v", query, errs)
		}
		if _, got := lonePets(oc.Operation); got != want {
			t.Errorf("%s: lonePets = %v; want %v", query, got, want)
		}
	}
}
