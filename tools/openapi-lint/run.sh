#!/usr/bin/env bash
# run.sh lints the OpenAPI document as the service serves it (servers from the default settings)
# with Redocly CLI's recommended rules (redocly.yaml, .redocly.lint-ignore.yaml) and Spectral's
# spectral:oas ruleset (.spectral.yaml), both pinned in package-lock.json. It exits non-zero on
# any error or warning of either. It needs go, node 20+ and npm; `npm ci` runs when node_modules
# is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

[ -d "$here/node_modules" ] || (cd "$here" && npm ci --silent --no-audit --no-fund)
mkdir -p "$here/served"
(cd "$root" && go run ./tools/openapi-lint "$here/served/openapi.json")

cd "$here"
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
status=0
node_modules/.bin/redocly lint --config redocly.yaml --max-problems 100 served/openapi.json || status=1
node_modules/.bin/spectral lint --ruleset .spectral.yaml --fail-severity warn served/openapi.json || status=1
exit "$status"
