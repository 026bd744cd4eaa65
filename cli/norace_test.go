//go:build !race

package cli

// slowdown is how many times slower the tests' binaries run: 1 without
// the race detector (see race_test.go).
const slowdown = 1
