//go:build !race

package monitor

// raceOn: the tests run under the race detector.
const raceOn = false
