#!/usr/bin/env bash
# run.sh runs the README's snippets as written (e2e TestReadme) with nothing skipped: the Node
# subscription snippets of README.md and docs/subscriptions.md with graphql-ws and ws, and
# graphql-sse (pinned in package-lock.json), and the go mod line
# of "The Go client" with the module proxy (PETSTORE_TEST_README_ONLINE=1; make test runs it
# offline, and skips it where the module cache lacks what go mod tidy reads). It needs go,
# bash, curl, node 20+ and npm; `npm ci` runs when node_modules is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

[ -d "$here/node_modules" ] || (cd "$here" && npm ci --silent --no-audit --no-fund)
cd "$root"
PETSTORE_TEST_README_ONLINE=1 go test -count=1 -run '^TestReadme$' ./e2e/
