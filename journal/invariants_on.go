//go:build invariants || race

package journal

// invariants enables costly self-checks: every append re-reads and checks
// the tail of each world it writes. Build with -tags invariants or -race.
const invariants = true
