# The pet store service. `make run` starts it on the embedded SQLite default; `make test` runs
# every test (MySQL and Redis tests skip when those servers are unreachable, unless
# PETSTORE_TEST_REQUIRE_SERVICES=1 or CI=true).

GO ?= go
FUZZTIME ?= 30s

# The build's version and commit, stamped into the binary (petstore --version, the start-up log
# line, petstore_build_info) and the image's OCI labels.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
STAMP = -X petstore/internal/version.version=$(VERSION) -X petstore/internal/version.commit=$(COMMIT)

.PHONY: run test lint build generate check-generated check-fastpaths fuzz playground-assets reference-assets ops-check check-tree bench bench-smoke soak soak-smoke \
	cluster-test outage-test galera-test image image-test

run:
	$(GO) run -ldflags='$(STAMP)' . serve

# Go alone: vet and every test (those that need MySQL, Redis, Node or Chromium skip, saying so,
# when they are absent, unless CI=true or PETSTORE_TEST_REQUIRE_SERVICES=1); about a minute on
# two cores. -parallel 16: most e2e tests call t.Parallel and spend their time waiting (on
# timers, on servers and browsers of their own), so 16 at a time keep two cores busy where the
# default, GOMAXPROCS (2), would leave them idle for minutes. tools/apicompat (a module of its
# own) checks that rest/openapi.json breaks no client of the published v1 document; it fetches
# oasdiff and the pinned oapi-codegen through the Go module proxy when the module cache lacks them.
# testkit/test.sh runs go test and then says what skipped for want of a server or program, and why.
test:
	$(GO) vet ./...
	cd perf && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd tools/apicompat && $(GO) vet ./... && $(GO) test -count=1 ./...
	GO=$(GO) testkit/test.sh -count=1 -parallel 16 ./...

# The lints that need Node and packages from the npm registry (pinned by their lock files): the
# GraphQL-over-HTTP audit (graphql-http, against a running server), the GraphQL schema lint
# (graphql-schema-linter, on the served SDL), the OpenAPI lints (Redocly and Spectral, on the
# served document), and the README's snippets run whole (its Node client with graphql-ws and ws,
# its go mod line with the module proxy: make test skips them where those are not at hand), and
# the trusted documents that graphql-codegen and Apollo's tools list for a small app, run by
# Apollo Client by id (tools/trusted-docs). CI runs them.
lint:
	tools/graphql-audit/run.sh
	tools/graphql-schema-lint/run.sh
	tools/openapi-lint/run.sh
	tools/readme-js/run.sh
	tools/trusted-docs/run.sh

build:
	$(GO) build -ldflags='$(STAMP)' -o bin/petstore .

# Checks the alert rules of deploy/ops with promtool (Debian's prometheus package): syntax,
# queries and their unit tests (deploy/ops/alerts_test.yml). Then the Kubernetes manifests,
# offline (deploy/kubernetes/check, a module of its own): each decoded strictly into its
# k8s.io/api type, so that a mistyped field fails, and checked against each other.
ops-check:
	deploy/ops/check.sh
	cd deploy/kubernetes/check && $(GO) vet ./... && $(GO) test -count=1 ./...

# The container image (Containerfile): the static binary built here, FROM scratch, non-root.
# ENGINE is podman or docker, whichever is installed; where podman's overlay storage does not
# work, add ENGINE_FLAGS=--storage-driver=vfs.
IMAGE ?= petstore:latest
ENGINE ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)

image:
	rm -rf bin/image && mkdir -p bin/image/empty
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w $(STAMP)' -o bin/image/petstore .
	cp /etc/ssl/certs/ca-certificates.crt bin/image/
	$(ENGINE) $(ENGINE_FLAGS) build -f Containerfile --build-arg VERSION=$(VERSION) --build-arg REVISION=$(COMMIT) \
		--build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) -t $(IMAGE) .

# Builds the image and checks it (e2e/ops_image_test.go): its user and files, and the binary taken out
# of it serving on the SQLite default. Containers are not run: the test runs the binary.
image-test: image
	PETSTORE_TEST_IMAGE=$(IMAGE) PETSTORE_TEST_ENGINE="$(ENGINE) $(ENGINE_FLAGS)" \
		$(GO) test -tags image -count=1 -run '^TestImage$$' -v ./e2e/

# Rolling restarts under load (e2e/ops_cluster*_test.go, about 40 s) behind a real HAProxy
# configured by deploy/haproxy.cfg (Debian's haproxy package), on MariaDB and Redis. Three
# instances, each restarted in turn with SIGTERM: no request may fail, and the pets stored must
# be exactly those acknowledged with 201. Two instances, pets created on one while the other,
# which the README's graphql-ws client and docs/subscriptions.md's graphql-sse client are
# subscribed through, is restarted: each client prints every pet acknowledged with 201 once, in
# id order. The clients' packages (tools/readme-js) are installed with npm ci when missing.
cluster-test:
	$(GO) vet -tags cluster ./e2e/
	[ -d tools/readme-js/node_modules ] || (cd tools/readme-js && npm ci --silent --no-audit --no-fund)
	$(GO) test -tags cluster -count=1 -run '^(TestRollingRestart|TestRollingRestartKeepsSubscriptions)$$' -v ./e2e/

# The database cut for 30 s under load, then a minute of recovery (e2e/ops_outage_test.go, about 95 s;
# make test runs the same test with a 3 s cut): valid keys get only 200 or 503, never 401 or 429.
outage-test:
	PETSTORE_TEST_OUTAGE=30s $(GO) test -count=1 -run '^TestOutageUnderLoad$$' -v ./e2e/

# A real 3-node MariaDB Galera cluster (testkit/dbtest.StartGalera: its own datadirs and free
# ports, galera-4 and rsync from Debian; a cluster per test, about 10 minutes in all): one
# instance per node; read-your-writes across instances with and without causal reads, paging
# while two nodes take writes, instances starting at once (PETSTORE_TEST_GALERA_ROUNDS rounds,
# 20 by default), a node killed under load and rejoining, POSTs a second, cached pages never
# stale, every pet's webhook delivered once (e2e/paging_galera_test.go, e2e/ops_galera_*_test.go,
# e2e/webhooks_galera_test.go).
galera-test:
	$(GO) vet -tags galera ./e2e/
	$(GO) test -tags galera -count=1 -run '^TestGalera' -v ./e2e/

# Fails when git tracks a build output: a binary executable, or a file over 1 MiB outside the
# vendored page assets (tools/tracked-files/check.sh). CI runs it first.
check-tree:
	tools/tracked-files/check.sh

# Regenerates graph/generated.go from graph/schema.graphqls with the gqlgen pinned in go.mod,
# its list marshalling pointed at graph.marshalList (tools/gqlgen; see graph/slice.go), and
# client/openapi.gen.go from rest/openapi.json with the oapi-codegen pinned in client/doc.go.
generate:
	$(GO) run ./tools/gqlgen
	$(GO) generate ./client

# Fails when the committed generated code differs from what `make generate` produces.
check-generated: generate
	git diff --exit-code -- graph gqlgen.yml client

# Runs the differential tests and fuzz seeds that hold each fast path to the library path it
# replaces (docs/architecture.md, "Fast paths"): after any gqlgen or gqlparser upgrade.
check-fastpaths:
	$(GO) test -count=1 -run '^(TestFlatListsMatchGeneric|FuzzFlatLists|TestDirectSkipsNoInterceptor|FuzzPlainFlatPlan|FuzzGQLString|TestNoFieldInterceptors|TestGeneratedListsUseMarshalList|TestPetAddedMatchesGeneric|FuzzPetAdded|TestGeneratedPetAddedUsesMarshalPetAdded)$$' ./graph/
	$(GO) test -count=1 -run '^(FuzzWriteResponse|TestPlainResponseTaken)$$' ./graph/gqlhttp/

# Runs every fuzz target of the module's packages for FUZZTIME each, found by name (func FuzzX
# in a test file), so that a new one is never left out; their seed corpora run in every `make test`.
fuzz:
	@set -e; for dir in $$($(GO) list -f '{{.Dir}}' ./...); do \
		for target in $$(cat $$dir/*_test.go 2>/dev/null | grep -o '^func Fuzz[A-Za-z0-9_]*' | cut -c6-); do \
			echo "== $$dir $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$dir; \
		done; \
	done

# Refreshes the vendored GraphiQL and React builds from the npm registry (versions pinned in
# the script).
playground-assets:
	playground/update-assets.sh

# Refreshes the vendored Scalar build of the REST reference (/v1/docs) from the npm registry
# (version pinned in the script).
reference-assets:
	reference/update-assets.sh

# Measures the service, its page cache on and off, beside a tuned Gin + GORM server and a
# net/http + database/sql one (perf/bench/README.md): about 28 minutes; needs MariaDB and
# Redis. Not part of `make test`.
bench:
	cd perf && $(GO) run ./bench/cmd $(BENCHFLAGS)

# Every workload for 2 s on 1,000 rows (CI): only failed or non-2xx requests fail it.
bench-smoke:
	cd perf && $(GO) run ./bench/cmd -smoke $(BENCHFLAGS)

# Load and soak test (not part of `make test`): about 3-5 minutes against MySQL and Redis,
# with a real restart in the middle of a MariaDB of its own (free port, temporary data
# directory; mariadbd and mariadb-install-db needed): the machine's MariaDB is never touched.
soak:
	cd perf && $(GO) run ./soak

# The same for 20 s with a 2 s outage.
soak-smoke:
	cd perf && $(GO) run ./soak -smoke
