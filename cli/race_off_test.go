//go:build !race

package cli

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = false
