//go:build !invariants && !race

package demiurge

// verifyMemo is off: see invariants_on.go.
const verifyMemo = false

// verifyMemoV1 is verifyMemo for the reducer of Chat@1 worlds.
var verifyMemoV1 = verifyMemo
