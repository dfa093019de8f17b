#!/usr/bin/env bash
# make test's Go part, on the Cassandra node `make` started: every package
# under -race, and the fault explorers' every schedule without it.
#
# Three `go test` runs at once. The end-to-end package is the longest by
# far (about nine of make test's ten minutes), so it starts first, in a run
# of its own: in a single `go test ./...` it started only when one of the
# run's two slots (-p, the core count) came free, and the packages before
# it in the list (the launcher's three-node cluster test, the repository's
# integration tests) held both for minutes (measured: it started 414 s into
# the run). Beside it, every other package under -race, and the fault
# explorers without -race: about 37 000 schedules in 40 s, which under
# -race run one in 8 (they ran first, alone, before the node started).
#
# The outputs of the end-to-end run and the explorers' are kept in files
# and printed after the others', so the runs never interleave.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
e2e=shelf/tests/e2e
e2e_log=$(mktemp)
faults_log=$(mktemp)
trap 'rm -f "$e2e_log" "$faults_log"' EXIT

"$GO" test -race -count=1 -timeout 10m "./${e2e#shelf/}/" >"$e2e_log" 2>&1 &
e2e_pid=$!
"$GO" test -count=1 -timeout 10m ./tests/faults/ >"$faults_log" 2>&1 &
faults_pid=$!

rest=0
mapfile -t packages < <("$GO" list ./... | grep -vx "$e2e")
"$GO" test -race -count=1 -timeout 10m "${packages[@]}" || rest=$?

faults_status=0
wait "$faults_pid" || faults_status=$?
echo "every fault schedule, without -race:"
cat "$faults_log"
e2e_status=0
wait "$e2e_pid" || e2e_status=$?
cat "$e2e_log"
if ((rest != 0 || e2e_status != 0 || faults_status != 0)); then
	echo "make test: failed (end-to-end exit $e2e_status, explorers without -race exit $faults_status, other packages exit $rest)" >&2
	exit 1
fi
