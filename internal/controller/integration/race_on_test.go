//go:build race

package integration

// raceDetector: the race detector slows a template's loop 10-20 times; tests that need
// a loop to outlast a deadline and still end size it by this.
const raceDetector = true
