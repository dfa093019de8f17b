#!/usr/bin/env bash
# make test's database part: every Go package under -race, on the Cassandra
# node `make` started.
#
# The end-to-end package is the longest by far (about half of make test),
# so it starts first, in a `go test` of its own, beside one for every other
# package. In a single `go test ./...` it would start only when one of
# `go test`'s two slots (-p, the core count) came free, and the packages
# before it in the list (the launcher's three-node cluster test, the
# repository's integration tests) held both for minutes: measured, the
# end-to-end tests started 414 s into a 15-minute run.
#
# The end-to-end package's output is kept in a file and printed after the
# others', so the two never interleave.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
e2e=shelf/tests/e2e
log=$(mktemp)
trap 'rm -f "$log"' EXIT

"$GO" test -race -count=1 -timeout 10m "./${e2e#shelf/}/" >"$log" 2>&1 &
e2e_pid=$!

rest=0
mapfile -t packages < <("$GO" list ./... | grep -vx "$e2e")
"$GO" test -race -count=1 -timeout 10m "${packages[@]}" || rest=$?

e2e_status=0
wait "$e2e_pid" || e2e_status=$?
cat "$log"
if ((rest != 0 || e2e_status != 0)); then
	echo "make test: failed (end-to-end exit $e2e_status, other packages exit $rest)" >&2
	exit 1
fi
