#!/usr/bin/env bash
# run.sh lints the GraphQL schema as the service serves it (graph.SDL) with graphql-schema-linter,
# pinned in package-lock.json, and exits non-zero on any finding. The rules are listed in
# package.json: all of them but type-fields-sorted-alphabetically and
# input-object-fields-sorted-alphabetically, since fields are ordered for the reader (Pet's id
# first, PageInfo's as the Relay spec lists them). It needs go, node 18+ and npm; `npm ci` runs
# when node_modules is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

[ -d "$here/node_modules" ] || (cd "$here" && npm ci --silent --no-audit --no-fund)
mkdir -p "$here/served"
(cd "$root" && go run ./tools/graphql-schema-lint "$here/served/schema.graphql")

cd "$here"
node_modules/.bin/graphql-schema-linter --config-directory . served/schema.graphql
