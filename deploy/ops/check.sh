#!/usr/bin/env bash
# check.sh checks the operations kit with promtool (Debian's prometheus package): the syntax and
# queries of alerts.yml, then its unit tests in alerts_test.yml. The metric names of the rules
# and of dashboard.json are checked against the service by go test (ops_test.go).
set -euo pipefail
cd "$(dirname "$0")"
command -v promtool >/dev/null || { echo "check.sh: promtool missing (apt-get install prometheus)" >&2; exit 2; }
promtool check rules alerts.yml
promtool test rules alerts_test.yml
