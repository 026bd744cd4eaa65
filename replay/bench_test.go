package replay_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/replay"
)

// BenchmarkDiff diffs two texts of n lines with three changes (two lines
// inserted at the start, one changed in the middle, the last removed):
// "anchored" is replay.Diff; "lcs-table" is the diff it replaced, kept
// here only to measure it (a full n×m table of ints: 1.8 GB at 15,000
// lines; run it with -benchtime 1x).
func BenchmarkDiff(b *testing.B) {
	for _, n := range []int{1_000, 4_000, 15_000} {
		o := numbered(n)
		w := append([]string{"first\n", "second\n"}, o[:n-1]...)
		w[n/2] = "changed\n"
		old, new := strings.Join(o, ""), strings.Join(w, "")
		for _, algo := range []struct {
			name string
			diff func(a, b string) string
		}{
			{"anchored", func(a, b string) string { return replay.Diff("old", a, "new", b) }},
			{"lcs-table", lcsTableDiff},
		} {
			b.Run("lines="+strconv.Itoa(n)+"/"+algo.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(old) + len(new)))
				for b.Loop() {
					if d := algo.diff(old, new); !strings.Contains(d, "changed\n") {
						b.Fatalf("the diff misses the changed line:\n%.500s", d)
					}
				}
			})
		}
	}
}

// lcsTableDiff is replay.Diff as it was before it used
// github.com/rogpeppe/go-internal/diff: a longest common subsequence over a
// full table, O(len(a)·len(b)) in time and memory.
func lcsTableDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(al), len(bl)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && al[i] == bl[j]:
			lines = append(lines, line{' ', al[i]})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', al[i]})
			i++
		default:
			lines = append(lines, line{'+', bl[j]})
			j++
		}
	}
	const ctx = 3
	near := make([]bool, len(lines))
	for k, l := range lines {
		if l.op != ' ' {
			for d := max(0, k-ctx); d <= min(len(lines)-1, k+ctx); d++ {
				near[d] = true
			}
		}
	}
	var out strings.Builder
	skipped := false
	for k, l := range lines {
		if !near[k] {
			skipped = true
			continue
		}
		if skipped {
			out.WriteString("  …\n")
			skipped = false
		}
		out.WriteByte(l.op)
		out.WriteByte(' ')
		out.WriteString(l.text)
		out.WriteByte('\n')
	}
	if skipped {
		out.WriteString("  …\n")
	}
	return out.String()
}
