package introspect_test

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/tools/introspect"
)

// The probe world's journal after keyedRun: 1 Manifest; 2 Add a+2, 3 State a;
// 4 Add b+3 "x", 5 State b; 6 Add a+4, 7 State a; 8 Add b "delete",
// 9 State b deleted.
func keyedRun(t testing.TB) introspect.View {
	t.Helper()
	w, v := probeWorld(t)
	send(t, w, "probe/Add@1", `{"id": "a", "n": 2, "note": null}`)
	send(t, w, "probe/Add@1", `{"id": "b", "n": 3, "note": "x"}`)
	send(t, w, "probe/Add@1", `{"id": "a", "n": 4, "note": null}`)
	if h := send(t, w, "probe/Add@1", `{"id": "b", "n": 0, "note": "delete"}`); h.Seq != 9 {
		t.Fatalf("head %v; the cases assume 9", h)
	}
	return v
}

func TestKeyedState(t *testing.T) {
	v := keyedRun(t)
	for _, tc := range []struct {
		args string
		want map[string]string
	}{
		{`{"reducer": "probe/Sum@1"}`, map[string]string{
			"key_schema": `"probe/Key@1"`, "cells.0.key": `"a"`, "cells.1": `null`, "count": `1`, "truncated": `false`,
			"consistency": `"head"`, "meta.journal_height": `9`}},
		{`{"reducer": "probe/Sum@1", "consistency": "exact:3"}`, map[string]string{"cells.0.key": `"a"`, "count": `1`}},
		{`{"reducer": "probe/Sum@1", "consistency": "exact:2"}`, map[string]string{"cells": `[]`, "count": `0`}},
		{`{"reducer": "probe/Sum@1", "consistency": "exact:5"}`, map[string]string{"cells.0.key": `"a"`, "cells.1.key": `"b"`, "count": `2`}},
		{`{"reducer": "probe/Sum@1", "consistency": "exact:8"}`, map[string]string{"count": `2`}},
		{`{"reducer": "probe/Sum@1", "consistency": "exact:9"}`, map[string]string{"count": `1`}},
		{`{"reducer": "probe/Sum@1", "key": "a"}`, map[string]string{
			"key": `"a"`, "exists": `true`, "state": `{"total": 6, "notes": []}`, "state_schema": `"probe/SumState@1"`}},
		{`{"reducer": "probe/Sum@1", "key": "a", "consistency": "exact:3"}`, map[string]string{"state": `{"total": 2, "notes": []}`}},
		{`{"reducer": "probe/Sum@1", "key": "a", "consistency": "exact:6"}`, map[string]string{"state": `{"total": 2, "notes": []}`}},
		{`{"reducer": "probe/Sum@1", "key": "b", "consistency": "exact:5"}`, map[string]string{
			"exists": `true`, "state": `{"total": 3, "notes": ["x"]}`, "meta.journal_height": `5`}},
		{`{"reducer": "probe/Sum@1", "key": "b", "consistency": "exact:8"}`, map[string]string{"exists": `true`}},
		{`{"reducer": "probe/Sum@1", "key": "b"}`, map[string]string{"exists": `false`, "state": `null`, "state_hash": `null`, "key": `"b"`}},
		{`{"reducer": "probe/Sum@1", "key": "b", "consistency": "exact:9"}`, map[string]string{"exists": `false`}},
		{`{"reducer": "probe/Sum@1", "key": "zz"}`, map[string]string{"exists": `false`}},
		{`{"reducer": "probe/Sum@1", "key": {"text": "a"}}`, map[string]string{"exists": `true`, "key": `"a"`}},
		{`{"reducer": "probe/Count@1"}`, map[string]string{"exists": `false`, "key": `null`}},
	} {
		t.Run(tc.args, func(t *testing.T) {
			tl, r := run(t, v, introspect.ToolState, tc.args)
			out := checkOutput(t, tl, r)
			for path, want := range tc.want {
				if got := jsonOf(t, get(out, pathOf(path)...)); got != canon(t, want) {
					t.Errorf("%s = %s; want %s", path, got, want)
				}
			}
		})
	}
	// The state hashes the listing shows are the cells' own.
	_, r := run(t, v, introspect.ToolState, `{"reducer": "probe/Sum@1", "consistency": "exact:5"}`)
	list := decode(t, r.Stdout)
	for i, key := range []string{"a", "b"} {
		_, r := run(t, v, introspect.ToolState, `{"reducer": "probe/Sum@1", "key": "`+key+`", "consistency": "exact:5"}`)
		if got, want := get(decode(t, r.Stdout), "state_hash"), get(list, "cells", i, "state_hash"); got != want {
			t.Errorf("cell %s: state_hash %v; the listing says %v", key, got, want)
		}
	}
}

func TestKeyedErrors(t *testing.T) {
	v := keyedRun(t)
	for _, tc := range []struct{ args, stderr string }{
		{`{"reducer": "probe/Sum@1", "key": 5}`, "key 5 does not fit probe/Key@1, the key schema of probe/Sum@1"},
		{`{"reducer": "probe/Sum@1", "key": ["a"]}`, `key ["a"] does not fit probe/Key@1`},
		{`{"reducer": "probe/Count@1", "key": "a"}`, "reducer probe/Count@1 is not keyed; leave key out"},
	} {
		_, r := run(t, v, introspect.ToolState, tc.args)
		if r.ExitCode != 1 || r.Error != introspect.ErrorInvalidArguments || !strings.Contains(r.Stderr, tc.stderr) {
			t.Errorf("%s: exit %d, error %q, stderr %q; want 1, invalid_arguments, %q", tc.args, r.ExitCode, r.Error, r.Stderr, tc.stderr)
		}
	}
}

func TestModuleRoutesAndTriggers(t *testing.T) {
	_, v := probeWorld(t)
	for _, tc := range []struct {
		args string
		want map[string]string
	}{
		{`{"name": "probe/Sum@1"}`, map[string]string{
			"keyed": `true`, "key_schema.name": `"probe/Key@1"`, "key_schema.type": `{"text": {}}`,
			"event.type": `{"variant": {"Add": {"ref": "probe/Add@1"}}}`,
			"routes":     `[{"event": "probe/SumEvent@1", "key_field": "$value.id"}]`,
			"triggers": `[{"event": "probe/Ping@1", "plan": "probe/probe_plan@1", "correlate_by": "id",
				"why": "raises probe/SumEvent@1, which is routed to this reducer"}]`}},
		{`{"name": "probe/Count@1"}`, map[string]string{
			"keyed": `false`, "routes": `[{"event": "probe/Ping@1", "key_field": null}]`,
			"triggers": `[{"event": "probe/Ping@1", "plan": "probe/probe_plan@1", "correlate_by": "id",
				"why": "starts on probe/Ping@1, which is also routed to this reducer"}]`}},
	} {
		tl, r := run(t, v, introspect.ToolModule, tc.args)
		out := checkOutput(t, tl, r)
		for path, want := range tc.want {
			if got := jsonOf(t, get(out, pathOf(path)...)); got != canon(t, want) {
				t.Errorf("%s: %s = %s; want %s", tc.args, path, got, want)
			}
		}
	}
	// A plan's full AIR is there to read too.
	tl, r := run(t, v, introspect.ToolManifest, `{"def": "probe/probe_plan@1"}`)
	out := checkOutput(t, tl, r)
	if got := get(out, "def", "air", "steps", 10, "event"); got != "probe/SumEvent@1" {
		t.Errorf("plan AIR step 10 event %v", got)
	}
	if got := jsonOf(t, get(out, "defaults", "cap_grants")); got != canon(t, `[{"name": "query", "cap": "sys/query@1", "params": {"scope": null}}]`) {
		t.Errorf("cap grants %s", got)
	}
}
