#!/usr/bin/env bash
# make test, on the Cassandra node `make` started: every package with the
# integration tag, so every test there is (the fast tier's too, once),
# in two `go test` runs side by side.
#
# Unraced: the end-to-end package and the fault explorers, without -race.
# - The end-to-end package's time is the node's CPU (1.5 of the machine's
#   2 cores); the detector's share beside it (about 2.5 times the Go
#   side's CPU) made it 591 s instead of 283 s alone on a fresh node.
# - The explorers run every schedule only without the detector (under it,
#   one in eight: raceStride in tests/faults).
# `make test-race` runs both packages under -race, and CI runs it after
# make test, so no data race in the server's code or the explorers'
# goroutines goes unseen.
#
# Raced: every other package, under -race, the longest first.
#
# The end-to-end package is the longest by far, so its run starts first:
# in a single `go test ./...` it started only when one of the run's two
# slots (-p, the core count) came free, and the packages before it in the
# list held both for minutes (measured: it started 414 s into the run).
#
# make test used to run make test-fast first and then every package here
# under -race: each fast test twice, and 56 s of a 356 s run (CI at
# 5291d90). It is now every test once: 254 s from a fresh clone (two cores, quiet machine).
#
# The unraced run lets four tests of a package run at once (-parallel 4,
# not the core count): its tests wait on Cassandra (LWT rounds, leases,
# TTLs) far more than they compute, and with two the machine sat half
# idle while the end-to-end package set the pace. Measured from the same
# tree, one after the other on this 2-core machine: make test 332 s with
# two (end-to-end 314 s), 271 s with four (end-to-end 246 s).
#
# UNRACED_FLAGS are extra flags for the unraced run (make test-race:
# -race). The unraced run's output is kept in a file and printed after the
# raced one's, so the two never interleave.

set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
read -r -a unraced_flags <<<"${UNRACED_FLAGS:-}"
unraced=(shelf/tests/e2e shelf/tests/faults)
unraced_log=$(mktemp)
trap 'rm -f "$unraced_log"' EXIT

"$GO" test -tags integration "${unraced_flags[@]}" -count=1 -parallel "${E2E_PARALLEL:-4}" -timeout 15m "${unraced[@]}" >"$unraced_log" 2>&1 &
unraced_pid=$!

# The longest packages first, so the short ones fill in at the end instead
# of a long one starting last (go test starts them in the order given, as
# many at once as -p allows): the repository and store contracts on the
# node, the benchmark harness, the api command. (The launcher's three-node
# cluster test is make test-cluster's: three JVM starts beside the
# end-to-end package starved its node.)
first=(shelf/repository shelf/bench shelf/cmd/api shelf)
raced=0
mapfile -t packages < <(
	printf '%s\n' "${first[@]}"
	"$GO" list -tags integration ./... | grep -vxF "${unraced[@]/#/-e}" "${first[@]/#/-e}"
)
"$GO" test -tags integration -race -count=1 -timeout 10m "${packages[@]}" || raced=$?

unraced_status=0
wait "$unraced_pid" || unraced_status=$?
cat "$unraced_log"
if ((raced != 0 || unraced_status != 0)); then
	echo "make test: failed (end-to-end and explorers exit $unraced_status, other packages exit $raced)" >&2
	exit 1
fi
