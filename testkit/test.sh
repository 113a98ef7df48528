#!/usr/bin/env bash
# test.sh runs go test with the arguments given (make test: every package), then prints which
# tests skipped for want of a server or program, how many and why, one line each: go test shows
# a passing package's skips only with -v. dbtest.Unreachable, Missing and Skip write each skip
# to the file PETSTORE_TEST_SKIPS names. The exit status is go test's.
set -uo pipefail
skips=$(mktemp)
trap 'rm -f "$skips"' EXIT
PETSTORE_TEST_SKIPS=$skips "${GO:-go}" test "$@"
status=$?
awk -F '\t' '
	{ if (!($1 in why)) { why[$1] = $2; order[++n] = $1 } count[$1]++ }
	END {
		for (i = 1; i <= n; i++) {
			need = order[i]
			printf "skipped: %d %s, %s: %s\n", count[need], count[need] == 1 ? "test" : "tests", need, why[need]
		}
	}' "$skips"
exit $status
