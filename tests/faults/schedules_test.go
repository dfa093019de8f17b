package faults

import (
	"fmt"
	"sync/atomic"
	"testing"

	"shelf/tests/memstore"
)

// faultOnce makes call k of the store, counted from now, take fault.
func faultOnce(st *memstore.Store, k int, fault memstore.Fault) {
	at := st.Calls() + k
	st.FaultAt = func(n int, _ string) memstore.Fault {
		if n == at {
			return fault
		}
		return memstore.None
	}
}

// faultKthUnlessRacing makes call k of the store, counted from now, take
// fault, counting only the calls made while the returned flag is false: a
// competitor that races the action between its steps (or inside a slow
// call) sets it, so k names the same call of the action with every
// competitor. The flag is atomic: store calls run on fan-out goroutines.
func faultKthUnlessRacing(st *memstore.Store, k int, fault memstore.Fault) *atomic.Bool {
	racing := new(atomic.Bool)
	calls := 0
	st.FaultAt = func(int, string) memstore.Fault {
		if racing.Load() {
			return memstore.None
		}
		calls++
		if calls-1 == k {
			return fault
		}
		return memstore.None
	}
	return racing
}

// recovered ends the faults: the next calls are a new process's.
func recovered(st *memstore.Store) {
	st.FaultAt = nil
	st.Recover()
}

// callsOf counts the store calls run makes (without faults).
func callsOf(t *testing.T, st *memstore.Store, action string, run func() error) int {
	t.Helper()
	before := st.Calls()
	if err := run(); err != nil {
		t.Fatalf("%s without faults: %v", action, err)
	}
	return st.Calls() - before
}

// everySchedule runs explore for each fault at each of the action's store
// calls with each competitor (by index), logs how many, and returns it.
func everySchedule(t *testing.T, action string, calls int, competitors []string, explore func(name string, k int, fault memstore.Fault, competitor int)) int {
	t.Helper()
	return everyScheduleOf(t, action, calls, memstore.Faults, competitors, explore)
}

// everyScheduleOf is everySchedule with the given faults only (a
// continuation that matters for one kind of fault alone).
//
// Under the race detector (make test-race) it runs one schedule in each
// run of raceStride, the one chosen moving on with the call (so every
// fault and competitor is still met across the sample): the detector
// watches the explorers' goroutines (fan-outs, slow calls' Meanwhile) at
// about ten times the cost of a schedule. make test and make test-fast run
// this package without it, so every schedule is checked in every make test.
func everyScheduleOf(t *testing.T, action string, calls int, faults []memstore.Fault, competitors []string, explore func(name string, k int, fault memstore.Fault, competitor int)) int {
	t.Helper()
	n, i := 0, 0
	for k := 0; k < calls; k++ {
		for _, fault := range faults {
			for c, comp := range competitors {
				i++
				if raceDetector && i%raceStride != (k/raceStride)%raceStride {
					continue
				}
				explore(fmt.Sprintf("%s/call%d/%s/%s", action, k, fault, comp), k, fault, c)
				n++
			}
		}
	}
	if raceDetector {
		t.Logf("%s: %d store calls, %d of %d schedules (under the race detector: the run without it explores all)", action, calls, n, i)
	} else {
		t.Logf("%s: %d store calls, %d schedules", action, calls, n)
	}
	return n
}

// raceStride: under the race detector, one schedule in raceStride runs.
const raceStride = 8
