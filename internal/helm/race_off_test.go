//go:build !race

package helm

// raceDetector: see race_on_test.go.
const raceDetector = false
