#!/usr/bin/env bash
# make test and make test-race, on the Cassandra node `make` started:
# every package with the integration tag, so every test there is (the
# fast tier's too, once), in two `go test` runs side by side: the
# end-to-end package and the fault explorers in one, every other package
# in the other, the longest first. RACE=-race (make test-race, which CI
# runs right after make test) runs both under the race detector.
#
# make test runs without the detector: its time is the node's CPU, and
# the detector's share beside it starved the node (2 cores). Measured in
# CI from fresh clones: with every package but those two raced, make test
# took 371-387 s, the end-to-end package 341-353 s of it (140-160 s
# alone). The explorers run every schedule only without the detector
# (under it, one in eight: raceStride in tests/faults). No data race goes
# unseen: make test-race runs every package under it.
#
# The end-to-end package is the longest by far, so its run starts first:
# in a single `go test ./...` it started only when one of the run's two
# slots (-p, the core count) came free, and the packages before it in the
# list held both for minutes (measured: it started 414 s into the run).
#
# Its run lets four tests of a package run at once (-parallel 4, not the
# core count): its tests wait on Cassandra (LWT rounds, leases, TTLs) far
# more than they compute, and with two the machine sat half idle while
# the end-to-end package set the pace. Measured from the same tree, one
# after the other on this 2-core machine: make test 332 s with two
# (end-to-end 314 s), 271 s with four (end-to-end 246 s).
#
# Its output is kept in a file and printed after the other run's, so the
# two never interleave.

set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
read -r -a race <<<"${RACE:-}"
long=(shelf/tests/e2e shelf/tests/faults)
long_log=$(mktemp)
trap 'rm -f "$long_log"' EXIT

# Under the race detector (make test-race) two at a time: the detector
# makes the process, not Cassandra, the bottleneck, and with four a
# request's statements ran past their timeouts (two CI runs in a row, two
# different tests answered 503 where they count exact outcomes).
parallel=${E2E_PARALLEL:-4}
if [ -n "${RACE:-}" ]; then
	parallel=${E2E_PARALLEL:-2}
fi

# make test leaves go test's own vet checks to make test-race (CI runs it
# right after, on the same packages) and make lint: on a warm build cache
# they were 14 of the 32 CPU seconds of building every test binary, on
# a machine the run keeps busy from start to end.
vet=()
if [ -z "${RACE:-}" ]; then
	vet=(-vet=off)
fi
"$GO" test -tags integration "${race[@]}" "${vet[@]}" -count=1 -parallel "$parallel" -timeout 20m "${long[@]}" >"$long_log" 2>&1 &
long_pid=$!

# The longest packages first, so the short ones fill in at the end instead
# of a long one starting last (go test starts them in the order given, as
# many at once as -p allows): the repository and store contracts on the
# node, the benchmark harness, the api command. (The launcher's three-node
# cluster test is make test-cluster's: three JVM starts beside the
# end-to-end package starved its node.)
first=(shelf/repository shelf/tests/bench shelf/cmd/api shelf)
others=0
mapfile -t packages < <(
	printf '%s\n' "${first[@]}"
	"$GO" list -tags integration ./... | grep -vxF "${long[@]/#/-e}" "${first[@]/#/-e}"
)
"$GO" test -tags integration "${race[@]}" "${vet[@]}" -count=1 -timeout 10m "${packages[@]}" || others=$?

long_status=0
wait "$long_pid" || long_status=$?
cat "$long_log"
if ((others != 0 || long_status != 0)); then
	echo "make test: failed (end-to-end and explorers exit $long_status, other packages exit $others)" >&2
	exit 1
fi
