package replay_test

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// numbered returns n lines "line 0" … "line n-1", each ending in a
// newline.
func numbered(n int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = "line " + strconv.Itoa(i) + "\n"
	}
	return l
}

// chatState is the indented JSON of a chat-like state of n entries, five
// lines each, most of them repeated from entry to entry.
func chatState(n int, edit func(i int, e *schema.Map) *schema.Map) string {
	entries := make([]schema.Value, 0, n)
	for i := range n {
		e := schema.Record("call", fmt.Sprintf("call_%d", i), "status", schema.Variant("Ok", nil), "round", uint64(i/4))
		if edit != nil {
			e = edit(i, e)
		}
		if e != nil {
			entries = append(entries, e)
		}
	}
	return replay.IndentJSON(schema.Record("turn", schema.Record("round", uint64(n/4)), "entries", entries)) + "\n"
}

// applyDiff applies a unified diff made by replay.Diff to old and returns
// the new text, failing the test if a hunk does not match old.
func applyDiff(t *testing.T, old, d string) string {
	t.Helper()
	ol := strings.SplitAfter(old, "\n")
	lines := strings.SplitAfter(d, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		t.Fatalf("no ---/+++ header:\n%.300s", d)
	}
	var out strings.Builder
	next := 0 // the next line of old to copy
	for _, l := range lines[2:] {
		switch {
		case l == "":
		case strings.HasPrefix(l, "@@ "):
			var from, n, to, m int
			if _, err := fmt.Sscanf(l, "@@ -%d,%d +%d,%d @@", &from, &n, &to, &m); err != nil {
				t.Fatalf("bad hunk header %q: %v", l, err)
			}
			if n > 0 {
				from-- // 1-based, except for an empty range
			}
			if from < next {
				t.Fatalf("hunk %q goes back to line %d (at %d)", l, from, next)
			}
			out.WriteString(strings.Join(ol[next:from], ""))
			next = from
		case l[0] == ' ' || l[0] == '-':
			if next >= len(ol) || ol[next] != l[1:] {
				t.Fatalf("diff line %q does not match old line %d", l, next+1)
			}
			if l[0] == ' ' {
				out.WriteString(l[1:])
			}
			next++
		case l[0] == '+':
			out.WriteString(l[1:])
		default:
			t.Fatalf("bad diff line %q", l)
		}
	}
	out.WriteString(strings.Join(ol[next:], ""))
	return out.String()
}

// TestDiffLarge diffs texts of 15,000 lines and more with a few changes:
// the diff must hold the changed lines, a few hunks, and turn old into new.
// The quadratic diff it replaced allocated 1.8 GB for 15,000 lines a side.
func TestDiffLarge(t *testing.T) {
	const n = 15_000
	type tc struct {
		name     string
		old, new string
		want     []string // lines the diff must hold
		hunks    int
	}
	var tests []tc
	{
		o, w := numbered(n), numbered(n)
		w[7_500] = "line 7500 changed\n"
		tests = append(tests, tc{name: "one line changed", old: strings.Join(o, ""), new: strings.Join(w, ""),
			want: []string{"-line 7500\n", "+line 7500 changed\n", " line 7499\n", " line 7501\n"}, hunks: 1})
	}
	{
		o := numbered(n)
		w := append([]string{"first\n", "second\n"}, o[:n-1]...)
		w[5_002] = "line 5000 moved on\n"
		tests = append(tests, tc{name: "inserted, changed, removed", old: strings.Join(o, ""), new: strings.Join(w, ""),
			want: []string{"+first\n", "+second\n", "-line 5000\n", "+line 5000 moved on\n", "-line 14999\n"}, hunks: 3})
	}
	{
		o := strings.Repeat("x\n", n)
		w := strings.Repeat("x\n", 9_000) + "y\n" + strings.Repeat("x\n", n-9_001)
		tests = append(tests, tc{name: "no line unique", old: o, new: w, want: []string{"-x\n", "+y\n"}, hunks: 1})
	}
	{
		old := chatState(3_200, nil)
		new := chatState(3_200, func(i int, e *schema.Map) *schema.Map {
			switch i {
			case 1_000:
				return e.With("status", schema.Variant("Error", "timed out"))
			case 2_000:
				return nil
			}
			return e
		})
		tests = append(tests, tc{name: "a chat state's JSON", old: old, new: new,
			want: []string{"-      \"status\": {\n", "-        \"$tag\": \"Ok\"\n", "+        \"$tag\": \"Error\",\n", "+        \"$value\": \"timed out\"\n",
				"-      \"call\": \"call_2000\",\n"},
			hunks: 2})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if lines := strings.Count(tc.old, "\n"); lines < n {
				t.Fatalf("old has %d lines; want %d or more", lines, n)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			d := replay.Diff("old", tc.old, "new", tc.new)
			runtime.ReadMemStats(&after)
			for _, w := range tc.want {
				if !strings.Contains(d, "\n"+w) {
					t.Errorf("the diff has no line %q", w)
				}
			}
			if got := strings.Count(d, "\n@@ "); got != tc.hunks {
				t.Errorf("%d hunks; want %d", got, tc.hunks)
			}
			if got := applyDiff(t, tc.old, d); got != tc.new {
				t.Errorf("applying the diff to old does not give new:\n%.2000s", d)
			}
			// Not a time: bytes allocated, which the table of the old
			// diff made quadratic (1.8 GB here).
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("the diff allocated %d MB; want it linear in the texts (under 64 MB)", alloc>>20)
			}
			t.Logf("%d lines, %d hunks, %d diff bytes, %.1f MB allocated", strings.Count(tc.old, "\n"), strings.Count(d, "\n@@ "), len(d), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
			if t.Failed() {
				t.Logf("diff:\n%.3000s", d)
			}
		})
	}
	if d := replay.Diff("a", "same\n", "b", "same\n"); d != "" {
		t.Errorf("Diff of equal texts = %q; want \"\"", d)
	}
}

func TestValueChanges(t *testing.T) {
	long := strings.Repeat("é", 40)
	tests := []struct {
		name  string
		a, b  schema.Value
		limit int
		want  []string
		total int
	}{
		{name: "equal", a: schema.Record("a", uint64(1)), b: schema.Record("a", uint64(1)), limit: -1},
		{name: "nested field",
			a:    schema.Record("turn", schema.Record("round", uint64(3), "id", "t1"), "n", uint64(1)),
			b:    schema.Record("turn", schema.Record("round", uint64(4), "id", "t1"), "n", uint64(1)),
			want: []string{"turn.round: 3 → 4"}, limit: -1},
		{name: "fields absent on either side",
			a:    schema.Record("a", uint64(1), "gone", true),
			b:    schema.Record("a", uint64(1), "new", nil),
			want: []string{"new: (absent) → null", "gone: true → (absent)"}, limit: -1},
		{name: "list elements",
			a:    schema.Record("xs", []schema.Value{"a", "b"}),
			b:    schema.Record("xs", []schema.Value{"a", "c", "d"}),
			want: []string{`xs[1]: "b" → "c"`, `xs[2]: (absent) → "d"`}, limit: -1},
		{name: "variants of another tag differ whole",
			a:    schema.Record("pc", schema.Variant("Counting", nil)),
			b:    schema.Record("pc", schema.Variant("Done", nil)),
			want: []string{`pc: {"$tag":"Counting"} → {"$tag":"Done"}`}, limit: -1},
		{name: "variants of one tag differ inside",
			a:    schema.Variant("Wait", schema.Record("n", uint64(1))),
			b:    schema.Variant("Wait", schema.Record("n", uint64(2))),
			want: []string{"$value.n: 1 → 2"}, limit: -1},
		{name: "map keys that are not plain names",
			a:    schema.NewMap(schema.MapEntry{Key: uint64(7), Value: "x"}, schema.MapEntry{Key: "a b", Value: "y"}),
			b:    schema.NewMap(schema.MapEntry{Key: uint64(7), Value: "z"}, schema.MapEntry{Key: "a b", Value: "w"}),
			want: []string{`[7]: "x" → "z"`, `["a b"]: "y" → "w"`}, limit: -1},
		{name: "another type", a: schema.Record("v", uint64(1)), b: schema.Record("v", "1"), want: []string{`v: 1 → "1"`}, limit: -1},
		{name: "the whole value", a: uint64(1), b: int64(-1), want: []string{"(the whole value): 1 → -1"}, limit: -1},
		{name: "long values are cut", a: schema.Record("s", long), b: schema.Record("s", "x"),
			want: []string{`s: "` + strings.Repeat("é", 29) + `…` + ` → "x"`}, limit: -1},
		{name: "limit", a: []schema.Value{uint64(1), uint64(2), uint64(3)}, b: []schema.Value{uint64(4), uint64(5), uint64(6)},
			limit: 2, want: []string{"[0]: 1 → 4", "[1]: 2 → 5"}, total: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, total := replay.ValueChanges(tc.a, tc.b, tc.limit)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q; want %q", got, tc.want)
			}
			if want := max(tc.total, len(tc.want)); total != want {
				t.Errorf("total %d; want %d", total, want)
			}
		})
	}
}

// stateRecord returns a State record of reducer naming state (nil: the
// cell is deleted), with the fields kv besides, and the state's ref.
func stateRecord(t *testing.T, reducer string, state schema.Value, kv ...any) ([]byte, cas.Ref) {
	t.Helper()
	var ref cas.Ref
	rec := schema.Record(append([]any{"reducer", reducer}, kv...)...)
	if state != nil {
		b, err := schema.Encode(state)
		if err != nil {
			t.Fatal(err)
		}
		ref = cas.Sum(b)
		rec = rec.With("state", ref.String())
	}
	p, err := schema.Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	return p, ref
}

// TestDescribeStates renders divergences at State records.
func TestDescribeStates(t *testing.T) {
	old := schema.Record("turn", schema.Record("round", uint64(3)), "done", false)
	new := schema.Record("turn", schema.Record("round", uint64(4)), "done", false)
	op, oref := stateRecord(t, "x/Chat@1", old)
	np, nref := stateRecord(t, "x/Chat@1", new)
	dp, _ := stateRecord(t, "x/Chat@1", nil)
	kp, _ := stateRecord(t, "x/Chat@1", new, "key", "k2")
	jr := func(p []byte) *journal.Record { return &journal.Record{Seq: 4, Kind: world.KindState, Payload: p} }
	de := func(p []byte) *journal.Entry { return &journal.Entry{Kind: world.KindState, Payload: p} }
	tests := []struct {
		name   string
		d      *world.DivergenceError
		want   []string
		absent []string
	}{
		{name: "two states",
			d: &world.DivergenceError{World: "w", Seq: 4, Reason: "the record differs", Journal: jr(op), Derived: de(np),
				JournalState: &world.StateValue{Ref: oref, Value: old}, DerivedState: &world.StateValue{Ref: nref, Value: new}},
			want: []string{
				"replay diverges: world w, seq 4, journal record State, derived record State\nthe record differs\n--- journal\n+++ replay\n",
				"-  \"state\": \"" + oref.String() + "\"",
				"the state of x/Chat@1 differs at 1 path:\n  turn.round: 3 → 4\n",
				"--- journal state " + oref.Short() + "\n+++ replayed state " + nref.Short() + "\n",
				"\n-    \"round\": 3\n+    \"round\": 4\n",
			}},
		{name: "a deleted cell",
			d: &world.DivergenceError{World: "w", Seq: 4, Reason: "the record differs", Journal: jr(op), Derived: de(dp),
				JournalState: &world.StateValue{Ref: oref, Value: old}},
			want:   []string{"journal state of x/Chat@1, " + oref.Short() + ":\n{\n  \"done\": false,\n"},
			absent: []string{"differs at"}},
		{name: "a lost blob",
			d: &world.DivergenceError{World: "w", Seq: 4, Reason: "the record differs", Journal: jr(op), Derived: de(np),
				JournalState: &world.StateValue{Ref: oref, Err: fmt.Errorf("read state %s: %w", oref, cas.ErrNotFound)},
				DerivedState: &world.StateValue{Ref: nref, Value: new}},
			want:   []string{"the journal state " + oref.Short() + " cannot be shown: read state " + oref.String() + ": cas: not found", "replayed state of x/Chat@1, " + nref.Short() + ":\n{"},
			absent: []string{"differs at"}},
		{name: "two cells",
			d: &world.DivergenceError{World: "w", Seq: 4, Reason: "the record differs", Journal: jr(op), Derived: de(kp),
				JournalState: &world.StateValue{Ref: oref, Value: old}, DerivedState: &world.StateValue{Ref: nref, Value: new}},
			want: []string{`the journal's state of x/Chat@1 and the replayed state of x/Chat@1 (key "k2") differ at 1 path:` + "\n  turn.round: 3 → 4\n"}},
		{name: "equal values",
			d: &world.DivergenceError{World: "w", Seq: 4, Reason: "the record differs", Journal: jr(op), Derived: de(np),
				JournalState: &world.StateValue{Ref: oref, Value: new}, DerivedState: &world.StateValue{Ref: nref, Value: new}},
			want:   []string{"\nthe two states decode to equal values: their encodings differ"},
			absent: []string{"differs at", "--- journal state"}},
		{name: "a record that does not decode",
			d: &world.DivergenceError{World: "w", Seq: 4, Reason: "the record differs", Journal: jr(op), Derived: de(np),
				JournalState: &world.StateValue{Err: errors.New("world: record 4 (State): cbor: unexpected EOF")},
				DerivedState: &world.StateValue{Ref: nref, Value: new}},
			want: []string{"\nthe journal state cannot be shown: world: record 4 (State): cbor: unexpected EOF\n"}},
		{name: "a missing record",
			d: &world.DivergenceError{World: "w", Seq: 4, Reason: "the code derives a State record the journal does not have", Derived: de(np),
				DerivedState: &world.StateValue{Ref: nref, Value: new}},
			want: []string{"replay derives:\nState {", "replayed state of x/Chat@1, " + nref.Short() + ":\n{\n  \"done\": false,\n  \"turn\": {\n    \"round\": 4\n  }\n}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := replay.Describe(fmt.Errorf("open world: %w", tc.d))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("the report has no %q:\n%s", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("the report has %q:\n%s", a, got)
				}
			}
		})
	}
}
