package demiurge

import (
	"math"
	"testing"
	"time"
)

// TestMsText checks the reducer's duration text against time.Duration's,
// which the reducer may not import.
func TestMsText(t *testing.T) {
	for _, ms := range []uint64{0, 1, 999, 1000, 1500, 1001, 59999, 60000, 90000, 600000, 3599999, 3600000, 5400250, 86400000 * 400} {
		if got, want := msText(ms), (time.Duration(ms) * time.Millisecond).String(); got != want && !(ms == 0 && got == "0ms") {
			t.Errorf("msText(%d) = %q, want %q", ms, got, want)
		}
	}
	if got := msText(math.MaxUint64); got == "" {
		t.Error("msText(MaxUint64) is empty")
	}
	if got := deadline(math.MaxUint64-5, 1); got != math.MaxUint64 {
		t.Errorf("deadline saturates: got %d", got)
	}
}
