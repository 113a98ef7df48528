#!/usr/bin/env bash
# run.sh checks the GraphQL endpoint against the GraphQL-over-HTTP spec: it builds the pet store,
# starts it on a free loopback port with a temporary SQLite database, runs the graphql-http server
# audits (audit.mjs) against /v1/graphql, stops the server and exits with the audit's status
# (0: no error and no warning). It needs go, node 18+ and npm; `npm ci` runs when node_modules is
# missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

(cd "$root" && go build -o "$tmp/petstore" .)
[ -d "$here/node_modules" ] || (cd "$here" && npm ci --silent --no-audit --no-fund)

# A private server: its own database, in-process rate limits, any free loopback port.
unset PETSTORE_REDIS_URL
export PETSTORE_ENV=development PETSTORE_DB="sqlite:$tmp/audit.db" PETSTORE_ADDR=127.0.0.1:0
# The audits send about 70 requests within a second, more than the development key's free
# plan allows in a minute: they get a key of their own with room to spare.
key="$("$tmp/petstore" keys create --plan enterprise --per-minute 10000 --per-day 100000 \
  --name graphql-audit 2>"$tmp/keys.log" | tail -n 1)" || { cat "$tmp/keys.log" >&2; exit 2; }

"$tmp/petstore" serve >"$tmp/stdout" 2>"$tmp/stderr" &
pid=$!
addr=
for _ in $(seq 300); do
  addr="$(sed -n 's#^petstore listening on http://\([^ ]*\) .*#\1#p' "$tmp/stdout")"
  [ -n "$addr" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "graphql-audit: the server did not start:" >&2
    cat "$tmp/stderr" >&2
    exit 2
  fi
  sleep 0.1
done
[ -n "$addr" ] || { echo "graphql-audit: the server did not listen within 30s" >&2; exit 2; }

status=0
AUDIT_URL="http://$addr/v1/graphql" AUDIT_KEY="$key" node "$here/audit.mjs" || status=$?
exit "$status"
