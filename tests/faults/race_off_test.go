//go:build !race

package faults

// raceDetector: this run does not watch for data races.
const raceDetector = false
