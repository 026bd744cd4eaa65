//go:build race

package cli

// slowdown is how many times slower the tests' binaries run: the race
// detector makes them 5 to 10 times slower, so a wait bounded in wall
// time (for a file, a request, a line at the terminal) waits that much
// longer before it calls the test failed.
const slowdown = 10
