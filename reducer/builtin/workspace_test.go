package builtin

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/reducertest"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
)

func norm(t testing.TB, name string, v schema.Value) schema.Value {
	t.Helper()
	n, err := schema.Normalize(schema.BuiltinTypes, schema.RefType(name), v)
	if err != nil {
		t.Fatalf("%s does not fit %s: %v", schema.String(v), name, err)
	}
	return n
}

func root(i int) string { return cas.Sum(fmt.Appendf(nil, "root %d", i)).String() }

// commit builds a normalized sys/WorkspaceCommit@1; expected < 0 leaves
// expected_head out.
func commit(t testing.TB, ws string, expected int, rootN int) schema.Value {
	var e schema.Value
	if expected >= 0 {
		e = uint64(expected)
	}
	return norm(t, history.CommitSchema, schema.Record("workspace", ws, "expected_head", e,
		"meta", schema.Record("root_hash", root(rootN), "owner", "test", "created_at", uint64(999))))
}

func step(t testing.TB, ws string, expected, rootN int, logical uint64) reducertest.Step {
	return reducertest.Step{
		Context: reducer.Context{Module: history.Module, Key: ws, EventSchema: history.CommitSchema,
			Stamp: reducer.Stamp{LogicalNowNS: logical}},
		Event: commit(t, ws, expected, rootN),
	}
}

// history summarizes a state: latest, then version:root#:created_at for
// every version, waiting ones marked with a '+'.
func historyString(t testing.TB, v schema.Value) string {
	t.Helper()
	norm(t, history.HistorySchema, v)
	h, err := history.Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "latest=%d", h.Latest)
	for v := uint64(1); v <= h.Latest+history.MaxWaiting+1; v++ {
		m, ok := h.Versions[v]
		if !ok {
			continue
		}
		n := -1
		for i := range 100 {
			if root(i) == m.RootHash.String() {
				n = i
			}
		}
		mark := ""
		if v > h.Latest {
			mark = "+"
		}
		fmt.Fprintf(&b, " %s%d:r%d@%d", mark, v, n, m.CreatedAt)
	}
	return b.String()
}

func TestWorkspaceReducer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []reducertest.Step
		want  []string // the history after each step
	}{
		{"in order", []reducertest.Step{step(t, "ws", 0, 1, 10), step(t, "ws", 1, 2, 20), step(t, "ws", 2, 3, 30)},
			[]string{"latest=1 1:r1@10", "latest=2 1:r1@10 2:r2@20", "latest=3 1:r1@10 2:r2@20 3:r3@30"}},
		{"no expected head applies on latest", []reducertest.Step{step(t, "ws", -1, 1, 10), step(t, "ws", -1, 2, 20)},
			[]string{"latest=1 1:r1@10", "latest=2 1:r1@10 2:r2@20"}},
		{"one ahead waits", []reducertest.Step{step(t, "ws", 1, 2, 10), step(t, "ws", 0, 1, 20)},
			[]string{"latest=0 +2:r2@10", "latest=2 1:r1@20 2:r2@10"}},
		{"out of order", []reducertest.Step{step(t, "ws", 2, 3, 10), step(t, "ws", 1, 2, 20), step(t, "ws", 0, 1, 30), step(t, "ws", 3, 4, 40)},
			[]string{"latest=0 +3:r3@10", "latest=0 +2:r2@20 +3:r3@10", "latest=3 1:r1@30 2:r2@20 3:r3@10", "latest=4 1:r1@30 2:r2@20 3:r3@10 4:r4@40"}},
		{"gap stays open", []reducertest.Step{step(t, "ws", 0, 1, 10), step(t, "ws", 2, 3, 20), step(t, "ws", 4, 5, 30)},
			[]string{"latest=1 1:r1@10", "latest=1 1:r1@10 +3:r3@20", "latest=1 1:r1@10 +3:r3@20 +5:r5@30"}},
		{"null fills a gap", []reducertest.Step{step(t, "ws", 1, 2, 10), step(t, "ws", -1, 1, 20)},
			[]string{"latest=0 +2:r2@10", "latest=2 1:r1@20 2:r2@10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := reducertest.Deterministic(t, WorkspaceReducer{}, nil, tc.steps)
			if len(outs) != len(tc.want) {
				t.Fatalf("%d outputs; want %d", len(outs), len(tc.want))
			}
			for i, o := range outs {
				if len(o.Events) != 0 || len(o.Effects) != 0 || len(o.Blobs) != 0 {
					t.Errorf("step %d emitted %v %v %v; want nothing", i, o.Events, o.Effects, o.Blobs)
				}
				if got := historyString(t, o.State); got != tc.want[i] {
					t.Errorf("after step %d: %s; want %s", i, got, tc.want[i])
				}
			}
		})
	}
}

func TestWorkspaceReducerRefuses(t *testing.T) {
	at := func(steps ...reducertest.Step) schema.Value {
		outs := reducertest.Deterministic(t, WorkspaceReducer{}, nil, steps)
		return outs[len(outs)-1].State
	}
	three := at(step(t, "ws", 0, 1, 1), step(t, "ws", 1, 2, 2), step(t, "ws", 2, 3, 3))
	waiting := at(step(t, "ws", 0, 1, 1), step(t, "ws", 2, 3, 2))
	other := step(t, "other", 0, 1, 1)
	other.Context.Key = "ws"
	for _, tc := range []struct {
		name  string
		state schema.Value
		step  reducertest.Step
		is    error
		msg   string
	}{
		{"behind", three, step(t, "ws", 1, 9, 5), ErrConflict, `workspace "ws": the commit was made on version 1, but the latest version is 3; recording it would undo versions 2 to 3 — make the change again on version 3`},
		{"behind from zero", three, step(t, "ws", 0, 9, 5), ErrConflict, "made on version 0, but the latest version is 3"},
		{"same waiting version", waiting, step(t, "ws", 2, 4, 5), ErrConflict, "version 3 (root " + root(3) + ") already waits for version 2"},
		{"too far ahead", three, step(t, "ws", 3+history.MaxWaiting+1, 9, 5), ErrConflict, "more than 1024 versions ahead of the latest version 3"},
		{"wrong cell", nil, other, ErrBadCommit, `the commit for workspace "other" reached the cell of "ws"`},
		{"bad name", nil, reducertest.Step{Event: commit(t, "a/b", 0, 1)}, ErrBadCommit, `workspace name "a/b" is not`},
		{"empty name", nil, reducertest.Step{Event: commit(t, "", 0, 1)}, ErrBadCommit, `workspace name "" is not`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.step.Context
			_, err := WorkspaceReducer{}.Step(&c, tc.state, tc.step.Event)
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v; want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q\nwant it to contain %q", err, tc.msg)
			}
		})
	}
}

func TestWorkspaceReducerBadInput(t *testing.T) {
	for _, ev := range []schema.Value{nil, "text", uint64(3), schema.Record("workspace", uint64(1))} {
		if _, err := (WorkspaceReducer{}).Step(&reducer.Context{}, nil, ev); err == nil {
			t.Errorf("Step(%s) succeeded; want an error", schema.String(ev))
		}
	}
	if _, err := (WorkspaceReducer{}).Step(&reducer.Context{}, "not a history", commit(t, "ws", 0, 1)); err == nil {
		t.Error("Step with a bad state succeeded; want an error")
	}
}

func TestRegister(t *testing.T) {
	r := reducer.NewRegistry()
	Register(r)
	if _, ok := r.Lookup(history.Module); !ok {
		t.Fatalf("%s is not registered", history.Module)
	}
	d, ok := schema.Builtin(schema.KindDefModule, history.Module)
	if !ok {
		t.Fatalf("no built-in defmodule %s", history.Module)
	}
	m := d.(*schema.DefModule)
	if m.KeySchema != history.NameSchema || m.Reducer.State != history.HistorySchema || m.Reducer.Event != history.CommitSchema {
		t.Errorf("defmodule %s is keyed by %s with state %s and event %s; the reducer expects %s, %s, %s", history.Module,
			m.KeySchema, m.Reducer.State, m.Reducer.Event, history.NameSchema, history.HistorySchema, history.CommitSchema)
	}
}

// FuzzWorkspaceReducer steps random commits: no panic, every state fits
// sys/WorkspaceHistory@1, and Latest never goes back.
func FuzzWorkspaceReducer(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})
	f.Add([]byte{3, 2, 1, 0, 255, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var state schema.Value
		var latest uint64
		for i, op := range ops {
			expected := int(op) - 1 // 255 → 254, 0 → none
			ev := commit(t, "ws", expected, i%100)
			out, err := WorkspaceReducer{}.Step(&reducer.Context{Key: "ws", Stamp: reducer.Stamp{LogicalNowNS: uint64(i)}}, state, ev)
			if err != nil {
				continue
			}
			norm(t, history.HistorySchema, out.State)
			h, err := history.Decode(out.State)
			if err != nil {
				t.Fatal(err)
			}
			if h.Latest < latest {
				t.Fatalf("latest went back from %d to %d", latest, h.Latest)
			}
			latest, state = h.Latest, out.State
		}
	})
}
