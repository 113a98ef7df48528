#!/usr/bin/env bash
# run.sh runs e2e TestDocumentsFromClientTools with nothing skipped: graphql-codegen's client
# preset and Apollo's generate-persisted-query-manifest write the manifests of this small app
# (src/operations.js), `petstore documents add` takes them, and Apollo Client's persisted-query
# link runs the app's operations by id against PETSTORE_DOCUMENTS=ids (packages pinned in
# package-lock.json). It needs go, node 20+ and npm; `npm ci` runs when node_modules is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

[ -d "$here/node_modules" ] || (cd "$here" && npm ci --silent --no-audit --no-fund)
cd "$root"
CI=true go test -count=1 -run '^TestDocumentsFromClientTools$' ./e2e/
