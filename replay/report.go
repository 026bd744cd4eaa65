package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// Describe renders an error from a replay for a person: for a divergence,
// the world, seq and record kind, then both sides decoded to JSON and a
// line diff between them; other errors as they are.
func Describe(err error) string {
	var d *world.DivergenceError
	if !errors.As(err, &d) {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "replay diverges: world %s, seq %d", d.World, d.Seq)
	var journalJS, derivedJS string
	if d.Journal != nil {
		fmt.Fprintf(&b, ", journal record %s", d.Journal.Kind)
		journalJS = PayloadJSON(d.Journal.Payload)
	}
	if d.Derived != nil {
		fmt.Fprintf(&b, ", derived record %s", d.Derived.Kind)
		derivedJS = PayloadJSON(d.Derived.Payload)
	}
	fmt.Fprintf(&b, "\n%s\n", d.Reason)
	switch {
	case d.Journal != nil && d.Derived != nil:
		b.WriteString("--- journal\n+++ replay\n")
		b.WriteString(Diff(d.Journal.Kind+" "+journalJS, d.Derived.Kind+" "+derivedJS))
	case d.Journal != nil:
		b.WriteString("journal has:\n" + d.Journal.Kind + " " + journalJS + "\n")
	case d.Derived != nil:
		b.WriteString("replay derives:\n" + d.Derived.Kind + " " + derivedJS + "\n")
	}
	return b.String()
}

// PayloadJSON decodes a record payload (canonical CBOR) to indented JSON;
// bytes that do not decode are shown as hex.
func PayloadJSON(p []byte) string {
	v, err := schema.Decode(p)
	if err != nil {
		return fmt.Sprintf("<%d bytes that do not decode: %x>", len(p), p)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, schema.ValueJSON(v), "", "  "); err != nil {
		return string(schema.ValueJSON(v))
	}
	return out.String()
}

// Diff returns a line diff of a and b: unchanged lines start with "  ",
// removed lines with "- ", added lines with "+ ". Runs of unchanged lines
// far from a change are elided.
func Diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	// Longest common subsequence, O(len(a)·len(b)): records are small.
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
