//go:build invariants || race

package demiurge

// verifyMemo makes every step that takes its state from the memo the world
// hands back (reducer.Context.Memo) decode the state all the same and fail
// if the two differ: the check that the memo changes nothing but speed. It
// costs more than the memo saves, so it is built in only with -tags
// invariants or -race (as journal's self-checks are).
const verifyMemo = true

// verifyMemoV1 is verifyMemo for the reducer of Chat@1 worlds.
var verifyMemoV1 = verifyMemo
