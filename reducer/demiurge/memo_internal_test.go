package demiurge

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/reducer"
)

// TestCheckMemo: the memo check (built in with -race or -tags invariants)
// passes a memo that is its state and catches one that is not.
func TestCheckMemo(t *testing.T) {
	st := &State{From: 3}
	st.fill()
	v, err := reducer.FromGo(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkMemo(v, st); err != nil {
		t.Errorf("checkMemo of the state's own memo: %v", err)
	}
	other := *st
	other.From = 4
	if err := checkMemo(v, &other); err == nil || !strings.Contains(err.Error(), "the memo of the state is not the state decoded") {
		t.Errorf("checkMemo of a different memo: %v; want the mismatch reported", err)
	}
}
