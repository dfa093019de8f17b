#!/usr/bin/env bash
# make test's database part, on the Cassandra node `make` started: every
# package with the integration tag (the tests that need a node), under
# -race, and the end-to-end package in a `go test` of its own, without it.
#
# Why the end-to-end package runs without the race detector here: its
# time is the node's CPU (1.5 of the machine's 2 cores), and the
# detector's share beside it (about 2.5 times the Go side's CPU) made it
# 591 s instead of 283 s alone on a fresh node. `make test-race` runs it
# under -race, and CI runs that after make test, so no data race in the
# server's code goes unseen; every other package, the fault explorers
# included, runs under -race here.
#
# The end-to-end package is the longest by far, so it starts first: in a
# single `go test ./...` it started only when one of the run's two slots
# (-p, the core count) came free, and the packages before it in the list
# (the launcher's three-node cluster test, the repository's integration
# tests) held both for minutes (measured: it started 414 s into the run).
# Every other package runs beside it. (The fault explorers' every schedule
# without -race, pure CPU, ran beside them once: the end-to-end package,
# bound by the node's CPU, slowed past its timeout. make test-fast runs
# them first, before the node starts.)
#
# E2E_FLAGS are extra flags for the end-to-end package (none by default;
# E2E_FLAGS=-race runs it as make test-race does).
# Its output is kept in a file and printed after the others', so the two
# never interleave.

set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
read -r -a e2e_flags <<<"${E2E_FLAGS:-}"
e2e=shelf/tests/e2e
e2e_log=$(mktemp)
trap 'rm -f "$e2e_log"' EXIT

"$GO" test -tags integration "${e2e_flags[@]}" -count=1 -timeout 15m "./${e2e#shelf/}/" >"$e2e_log" 2>&1 &
e2e_pid=$!

rest=0
mapfile -t packages < <("$GO" list -tags integration ./... | grep -vx "$e2e")
"$GO" test -tags integration -race -count=1 -timeout 10m "${packages[@]}" || rest=$?

e2e_status=0
wait "$e2e_pid" || e2e_status=$?
cat "$e2e_log"
if ((rest != 0 || e2e_status != 0)); then
	echo "make test: failed (end-to-end exit $e2e_status, other packages exit $rest)" >&2
	exit 1
fi
