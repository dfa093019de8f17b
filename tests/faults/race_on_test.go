//go:build race

package faults

// raceDetector: this run watches for data races (go test -race), at about
// ten times the cost of each schedule.
const raceDetector = true
