package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/agent/session"
)

// rowsText renders rows one a line: op, left number and line, right
// number and line.
func rowsText(rows []sideRow) string {
	var b strings.Builder
	for _, r := range rows {
		if r.Op == "…" {
			fmt.Fprintf(&b, "… %d\n", r.Skip)
			continue
		}
		fmt.Fprintf(&b, "%s %d:%s | %d:%s\n", r.Op, r.LN, r.Left, r.RN, r.Right)
	}
	return b.String()
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

func TestSideBySide(t *testing.T) {
	for _, tc := range []struct {
		name, left, right, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", "= 1:a | 1:a\n= 2:b | 2:b\n"},
		{"changed", "a\nb\nc\n", "a\nB\nc\n", "= 1:a | 1:a\n~ 2:b | 2:B\n= 3:c | 3:c\n"},
		{"inserted", "a\nc\n", "a\nb\nc\n", "= 1:a | 1:a\n+ 0: | 2:b\n= 2:c | 3:c\n"},
		{"removed", "a\nb\nc", "a\nc", "= 1:a | 1:a\n- 2:b | 0:\n= 3:c | 2:c\n"},
		{"left only", "a\n", "", "- 1:a | 0:\n"},
		{"right only", "", "a\n", "+ 0: | 1:a\n"},
		{"more on the left", "a\nb\nc\n", "x\n", "~ 1:a | 1:x\n- 2:b | 0:\n- 3:c | 0:\n"},
		{"long runs left out", numbered(1, 30), strings.Replace(numbered(1, 30), "l15\n", "L15\n", 1),
			"= 1:l1 | 1:l1\n= 2:l2 | 2:l2\n= 3:l3 | 3:l3\n= 4:l4 | 4:l4\n… 6\n= 11:l11 | 11:l11\n= 12:l12 | 12:l12\n= 13:l13 | 13:l13\n= 14:l14 | 14:l14\n" +
				"~ 15:l15 | 15:L15\n= 16:l16 | 16:l16\n= 17:l17 | 17:l17\n= 18:l18 | 18:l18\n= 19:l19 | 19:l19\n… 7\n= 27:l27 | 27:l27\n= 28:l28 | 28:l28\n= 29:l29 | 29:l29\n= 30:l30 | 30:l30\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rowsText(sideBySide(tc.left, tc.right)); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestSideBySideKeepsEveryLine: whatever the texts, the rows hold every
// line of each side once, in order, outside the runs left out.
func TestSideBySideKeepsEveryLine(t *testing.T) {
	texts := []string{"", "a\n", numbered(1, 40), strings.Replace(numbered(1, 40), "l3\n", "", 1) + "z\n",
		"x\n" + numbered(5, 25) + numbered(30, 33), numbered(1, 3) + numbered(1, 3)}
	for _, l := range texts {
		for _, r := range texts {
			rows := sideBySide(l, r)
			li, ri := 0, 0
			for _, row := range rows {
				if row.Op == "…" {
					li, ri = li+row.Skip, ri+row.Skip
					continue
				}
				if row.LN != 0 {
					if li++; row.LN != li {
						t.Fatalf("left line %d after %d:\n%s", row.LN, li-1, rowsText(rows))
					}
				}
				if row.RN != 0 {
					if ri++; row.RN != ri {
						t.Fatalf("right line %d after %d:\n%s", row.RN, ri-1, rowsText(rows))
					}
				}
			}
			if li != len(splitLines(l)) || ri != len(splitLines(r)) {
				t.Fatalf("%d and %d lines laid out; want %d and %d:\n%s", li, ri, len(splitLines(l)), len(splitLines(r)), rowsText(rows))
			}
		}
	}
}

// TestForkNote: a fork's line says which turns around it are the other
// world's, and says nothing of turns there are not.
func TestForkNote(t *testing.T) {
	open := []*session.Turn{{Chat: "main", RequestID: 2}}
	for _, tc := range []struct {
		name  string
		fk    session.Fork
		below bool
		want  string
	}{
		{"no turns", session.Fork{}, false, ""},
		{"turns below only", session.Fork{}, true, ": the turns below are this world's own"},
		{"turns above", session.Fork{Turns: 2}, false, ": the turns above are main's"},
		{"turns above and below", session.Fork{Turns: 2}, true, ": the turns above are main's; those below are this world's own"},
		{"mid-turn", session.Fork{Turns: 1, Open: open}, false, ": turn 2 of chat main above began in main and goes on in this world"},
		{"mid-turn after others", session.Fork{Turns: 2, Open: open}, true,
			": the turns above are main's, but for turn 2 of chat main, which goes on in this world; those below are this world's own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fk.From = "main"
			if got := forkNote(tc.fk, tc.below); got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
}
