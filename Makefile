# The pet store service. `make run` starts it on the embedded SQLite default; `make test` runs
# every test (MySQL and Redis tests skip when those servers are unreachable, unless
# PETSTORE_TEST_REQUIRE_SERVICES=1 or CI=true).

GO ?= go
FUZZTIME ?= 30s

.PHONY: run test build generate check-generated fuzz

run:
	$(GO) run . serve

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

build:
	$(GO) build -o bin/petstore .

# Regenerates graph/generated.go from graph/schema.graphqls with the gqlgen pinned in go.mod.
generate:
	$(GO) tool gqlgen generate

# Fails when the committed generated code differs from what `make generate` produces.
check-generated: generate
	git diff --exit-code -- graph gqlgen.yml

# Runs each fuzz target for FUZZTIME (their seed corpora run in every `make test`).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzListParams$$' -fuzztime $(FUZZTIME) ./rest/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeNewPet$$' -fuzztime $(FUZZTIME) ./rest/
