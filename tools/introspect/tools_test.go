package introspect_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
)

func TestToolsContract(t *testing.T) {
	_, v, _ := counterWorld(t)
	ts := introspect.Tools(v, nil)
	want := []string{introspect.ToolManifest, introspect.ToolSchemas, introspect.ToolModule, introspect.ToolState, introspect.ToolJournalHead}
	if len(ts) != len(want) {
		t.Fatalf("Tools returned %d tools; want %d", len(ts), len(want))
	}
	for i, tl := range ts {
		info := tl.Info()
		if info.Name != want[i] {
			t.Errorf("tool %d is %s; want %s", i, info.Name, want[i])
		}
		if info.Version != introspect.Version || info.Description == "" || info.ShortDescription == "" || info.SystemPrompt == "" {
			t.Errorf("%s: empty texts or wrong version", info.Name)
		}
		if !strings.Contains(info.Help, "NAME\n       "+info.Name+" - ") {
			t.Errorf("%s: help has no NAME line:\n%s", info.Name, info.Help)
		}
		if !json.Valid(info.InputSchema) {
			t.Errorf("%s: input schema is not JSON", info.Name)
		}
		outputSchema(t, tl)
		// The spec the model is sent is generated from the tool.
		sp := tools.SpecFor(tl, tools.FamilyIntrospect)
		if sp.Name != info.Name || string(sp.Parameters) != string(info.InputSchema) {
			t.Errorf("%s: spec %+v does not carry the tool's name and schema", info.Name, sp)
		}
	}
}

// The counter world's journal: 1 Manifest, 2 Start{3}, 3 State, 4 Tick,
// 5 State, 6 Tick, 7 State, 8 Tick, 9 State.
func TestToolsOnCounter(t *testing.T) {
	_, v, heads := counterWorld(t)
	if heads[len(heads)-1].Seq != 9 {
		t.Fatalf("the counter's journal ends at %v; the cases below assume 9", heads)
	}
	head := heads[len(heads)-1]
	manifest := v.Catalog().ManifestRef().String()
	stateRef, _ := v.Catalog().DefRef("defschema", "counter/State@1")
	// The module's def pins its WASM code's hash (examples/counter/modules),
	// so its ref moves when the module is rebuilt.
	moduleRef, _ := v.Catalog().DefRef("defmodule", "counter/Counter@1")
	for _, tc := range []struct {
		tool, args string
		want       map[string]string // path (dot separated) → compact JSON
	}{
		{introspect.ToolJournalHead, `{}`, map[string]string{
			"world": `"c1"`, "height": `9`, "head_hash": `"` + head.Hash.String() + `"`, "manifest_hash": `"` + manifest + `"`}},
		{introspect.ToolJournalHead, ``, map[string]string{"height": `9`}},
		{introspect.ToolManifest, `{}`, map[string]string{
			"world": `"c1"`, "manifest_hash": `"` + manifest + `"`, "air_version": `"1"`,
			"schemas.1": `{"name":"counter/State@1","hash":"` + stateRef.String() + `"}`,
			"modules":   `[{"name":"counter/Counter@1","hash":"` + moduleRef.String() + `"}]`,
			"plans":     `[]`, "routing": `{"events":[{"event":"counter/Event@1","reducer":"counter/Counter@1"}]}`,
			"triggers": `[]`, "defaults": `{}`, "builtin": `null`, "def": `null`,
			"meta": `{"journal_height":9,"manifest_hash":"` + manifest + `","snapshot_hash":null}`}},
		{introspect.ToolManifest, `{"def": "counter/State@1"}`, map[string]string{
			"def.kind": `"defschema"`, "def.hash": `"` + stateRef.String() + `"`,
			"def.air": `{"name":"counter/State@1","type":{"record":{"pc":{"ref":"counter/Phase@1"},"remaining":{"nat":{}}}},"$kind":"defschema"}`}},
		{introspect.ToolManifest, `{"def": "sys/ReadMeta@1"}`, map[string]string{"def.kind": `"defschema"`, "def.name": `"sys/ReadMeta@1"`}},
		{introspect.ToolManifest, `{"def": "counter/Counter@1", "kind": "defmodule", "consistency": "exact:4"}`, map[string]string{
			"def.air.abi": `{"reducer":{"event":"counter/Event@1","state":"counter/State@1"}}`, "meta.journal_height": `4`}},
		{introspect.ToolManifest, `{"include_builtin": true}`, map[string]string{"builtin.effects.0": `"sys/blob.get@1"`}},
		{introspect.ToolManifest, `{"consistency": "at_least:2"}`, map[string]string{"meta.journal_height": `9`}},
		{introspect.ToolSchemas, `{}`, map[string]string{
			"schemas.0.name": `"counter/Event@1"`, "schemas.4.name": `"counter/Tick@1"`, "schemas.5": `null`,
			"schemas.4.type": `{"unit":{}}`}},
		{introspect.ToolSchemas, `{"names": ["counter/State@1"]}`, map[string]string{
			"schemas": `[{"name":"counter/State@1","hash":"` + stateRef.String() + `","type":{"record":{"pc":{"ref":"counter/Phase@1"},"remaining":{"nat":{}}}}}]`}},
		{introspect.ToolSchemas, `{"names": ["counter/State@1"], "expand_refs": true}`, map[string]string{
			"schemas.1.name": `"counter/Phase@1"`, "schemas.1.type": `{"variant":{"Done":{"unit":{}},"Idle":{"unit":{}},"Counting":{"unit":{}}}}`, "schemas.2": `null`}},
		{introspect.ToolSchemas, `{"names": ["sys/ReadMeta@1", "counter/Tick@1"]}`, map[string]string{
			"schemas.0.type": `{"record":{"manifest_hash":{"hash":{}},"snapshot_hash":{"option":{"hash":{}}},"journal_height":{"nat":{}}}}`,
			"schemas.1.name": `"counter/Tick@1"`}},
		{introspect.ToolModule, `{"name": "counter/Counter@1"}`, map[string]string{
			"module_kind": `"reducer"`, "keyed": `false`, "key_schema": `null`, "state.name": `"counter/State@1"`,
			"state.type": `{"record":{"pc":{"ref":"counter/Phase@1"},"remaining":{"nat":{}}}}`,
			"event.name": `"counter/Event@1"`, "event.type": `{"variant":{"Tick":{"ref":"counter/Tick@1"},"Start":{"ref":"counter/Start@1"}}}`,
			"routes": `[{"event":"counter/Event@1","key_field":null}]`, "triggers": `[]`, "effects_emitted": `[]`,
			"cap_slots": `{}`, "bindings": `{}`, "context": `null`, "input": `null`}},
		{introspect.ToolModule, `{"name": "sys/CapEnforceHttpOut@1"}`, map[string]string{
			"module_kind": `"pure"`, "input.name": `"sys/CapCheckInput@1"`, "output.name": `"sys/CapCheckOutput@1"`, "state": `null`, "routes": `[]`}},
		{introspect.ToolModule, `{"name": "sys/Workspace@1"}`, map[string]string{
			"keyed": `true`, "key_schema.name": `"sys/WorkspaceName@1"`, "key_schema.type": `{"text":{}}`, "context": `"sys/ReducerContext@1"`}},
		{introspect.ToolState, `{"reducer": "counter/Counter@1"}`, map[string]string{
			"reducer": `"counter/Counter@1"`, "key": `null`, "consistency": `"head"`, "exists": `true`,
			"state_schema": `"counter/State@1"`, "state": `{"pc":{"$tag":"Done"},"remaining":0}`, "meta.journal_height": `9`}},
		{introspect.ToolState, `{"reducer": "counter/Counter@1", "key": null}`, map[string]string{"exists": `true`}},
		{introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": "at_least:9"}`, map[string]string{
			"consistency": `"at_least:9"`, "meta.journal_height": `9`}},
		{introspect.ToolState, `{"reducer": "sys/Workspace@1"}`, map[string]string{
			"key_schema": `"sys/WorkspaceName@1"`, "cells": `[]`, "count": `0`, "truncated": `false`}},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			tl, r := run(t, v, tc.tool, tc.args)
			out := checkOutput(t, tl, r)
			for path, want := range tc.want {
				if got := jsonOf(t, get(out, pathOf(path)...)); got != canon(t, want) {
					t.Errorf("%s = %s; want %s", path, got, want)
				}
			}
		})
	}
}

// TestStateExact reads the counter at every height of its run.
func TestStateExact(t *testing.T) {
	_, v, _ := counterWorld(t)
	none := `null`
	counting := func(n int) string { return `{"pc":{"$tag":"Counting"},"remaining":` + string(rune('0'+n)) + `}` }
	for h, want := range []string{
		1: none, 2: none, // the manifest, then Start before its State record
		3: counting(3), 4: counting(3),
		5: counting(2), 6: counting(2),
		7: counting(1), 8: counting(1),
		9: `{"pc":{"$tag":"Done"},"remaining":0}`,
	} {
		if h == 0 {
			continue
		}
		c := "exact:" + string(rune('0'+h))
		tl, r := run(t, v, introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": "`+c+`"}`)
		out := checkOutput(t, tl, r)
		if got := jsonOf(t, out["state"]); got != want {
			t.Errorf("%s: state %s; want %s", c, got, want)
		}
		if got := out["exists"]; got != (want != none) {
			t.Errorf("%s: exists %v", c, got)
		}
		if got := get(out, "meta", "journal_height"); got != float64(h) {
			t.Errorf("%s: meta.journal_height %v; want %d", c, got, h)
		}
		if got := get(out, "meta", "manifest_hash"); got != v.Catalog().ManifestRef().String() {
			t.Errorf("%s: meta.manifest_hash %v", c, got)
		}
		if out["consistency"] != c {
			t.Errorf("consistency %v; want %s", out["consistency"], c)
		}
	}
}

// TestStateExactMatchesLive compares what the head showed after each
// input with what exact:<that height> shows once the world has moved on.
func TestStateExactMatchesLive(t *testing.T) {
	w, v, _ := counterWorld(t)
	type seen struct {
		height float64
		state  string
		hash   any
	}
	var live []seen
	look := func() {
		tl, r := run(t, v, introspect.ToolState, `{"reducer": "counter/Counter@1"}`)
		out := checkOutput(t, tl, r)
		live = append(live, seen{get(out, "meta", "journal_height").(float64), jsonOf(t, out["state"]), out["state_hash"]})
	}
	look()
	send(t, w, "counter/Event@1", `{"Start": {"target": 5}}`)
	look()
	for range 6 {
		send(t, w, "counter/Event@1", `"Tick"`)
		look()
	}
	for _, s := range live {
		args := `{"reducer": "counter/Counter@1", "consistency": "exact:` + jsonOf(t, s.height) + `"}`
		tl, r := run(t, v, introspect.ToolState, args)
		out := checkOutput(t, tl, r)
		if got := jsonOf(t, out["state"]); got != s.state || out["state_hash"] != s.hash {
			t.Errorf("%s: state %s %v; the head showed %s %v", args, got, out["state_hash"], s.state, s.hash)
		}
	}
}

// toolErrorCases are calls on the counter world (head 9) that fail.
var toolErrorCases = []struct {
	tool, args string
	category   string
	stderr     []string
}{
	{introspect.ToolState, `{"reducer": "counter/Countr@1"}`, introspect.ErrorNotFound,
		[]string{`introspect_state: unknown reducer "counter/Countr@1"; the world's reducers are: counter/Counter@1, sys/HttpPublish@1, sys/Workspace@1`}},
	{introspect.ToolState, `{"reducer": "sys/CapEnforceHttpOut@1"}`, introspect.ErrorNotFound,
		[]string{"sys/CapEnforceHttpOut@1 is a pure module, not a reducer; the world's reducers are: counter/Counter@1"}},
	{introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": "exact:10"}`, introspect.ErrorUnavailable,
		[]string{"exact:10 is above the journal head 9"}},
	{introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": "exact:0"}`, introspect.ErrorUnavailable,
		[]string{"heights start at 1 (the head is 9)"}},
	{introspect.ToolManifest, `{"consistency": "exact:99"}`, introspect.ErrorUnavailable, []string{"exact:99 is above the journal head 9"}},
	{introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": "exact:x"}`, introspect.ErrorInvalidArguments,
		[]string{`consistency: bad consistency "exact:x": height "x" is not a decimal number; want "head", "exact:<height>" or "at_least:<height>"`}},
	{introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": 3}`, introspect.ErrorInvalidArguments,
		[]string{"arguments.consistency: got number, want string"}},
	{introspect.ToolState, `{"reducer": "counter/Counter@1", "key": "k"}`, introspect.ErrorInvalidArguments,
		[]string{"reducer counter/Counter@1 is not keyed; leave key out"}},
	{introspect.ToolState, `{}`, introspect.ErrorInvalidArguments, []string{"missing property 'reducer'"}},
	{introspect.ToolState, `{"reducer": "counter/Counter@1", "keys": 1}`, introspect.ErrorInvalidArguments,
		[]string{"additional properties 'keys' not allowed (the properties are: consistency, key, reducer)"}},
	{introspect.ToolState, `[1]`, introspect.ErrorInvalidArguments, []string{"the arguments must be a JSON object, such as {\"reducer\": \"counter/Counter@1\"}"}},
	{introspect.ToolState, `{"reducer":`, introspect.ErrorInvalidArguments, []string{"the arguments are not valid JSON"}},
	{introspect.ToolModule, `{"name": "counter/Count@1"}`, introspect.ErrorNotFound,
		[]string{`unknown defmodule "counter/Count@1"; the manifest's modules are: counter/Counter@1`}},
	{introspect.ToolModule, `{"name": ""}`, introspect.ErrorInvalidArguments, []string{"arguments.name: minLength"}},
	{introspect.ToolSchemas, `{"names": ["counter/State@1", "counter/Stat@1"]}`, introspect.ErrorNotFound,
		[]string{`unknown defschema "counter/Stat@1"; the manifest's schemas are: counter/Event@1, counter/Phase@1, counter/Start@1, counter/State@1, counter/Tick@1`}},
	{introspect.ToolSchemas, `{"names": "counter/State@1"}`, introspect.ErrorInvalidArguments, []string{"arguments.names: got string, want array"}},
	{introspect.ToolManifest, `{"def": "counter/Nope@1"}`, introspect.ErrorNotFound,
		[]string{`unknown def "counter/Nope@1"; the manifest lists: counter/Event@1, counter/Phase@1`}},
	{introspect.ToolManifest, `{"def": "counter/State@1", "kind": "defmodule"}`, introspect.ErrorNotFound,
		[]string{`unknown defmodule "counter/State@1"; the manifest's modules are: counter/Counter@1`}},
	{introspect.ToolManifest, `{"kind": "defmodule"}`, introspect.ErrorInvalidArguments, []string{"kind defmodule is given without def"}},
	{introspect.ToolManifest, `{"kind": "module", "def": "x"}`, introspect.ErrorInvalidArguments, []string{"arguments.kind: value must be one of"}},
	{introspect.ToolJournalHead, `{"consistency": "head"}`, introspect.ErrorInvalidArguments, []string{"additional properties 'consistency' not allowed (this tool takes no arguments: pass {})"}},
}

func TestToolErrors(t *testing.T) {
	_, v, _ := counterWorld(t)
	for _, tc := range toolErrorCases {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			_, r := run(t, v, tc.tool, tc.args)
			if r.ExitCode != 1 || r.Error != tc.category || r.Stdout != "" {
				t.Errorf("exit %d, error %q, stdout %q; want 1, %q, nothing", r.ExitCode, r.Error, r.Stdout, tc.category)
			}
			if !strings.HasPrefix(r.Stderr, tc.tool+": ") || !strings.HasSuffix(r.Stderr, "\n") {
				t.Errorf("stderr %q does not start with the tool's name and end with a newline", r.Stderr)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(r.Stderr, s) {
					t.Errorf("stderr %q; want it to contain %q", r.Stderr, s)
				}
			}
		})
	}
}

func TestOutputLimit(t *testing.T) {
	_, v, _ := counterWorld(t)
	full := toolNamed(t, v, introspect.ToolManifest).Run(t.Context(), tools.Request{Arguments: []byte(`{"include_builtin": true}`)}, nil)
	if full.StdoutTruncated || len(full.Stdout) > introspect.DefaultOutputLimit {
		t.Fatalf("the default limit cut the manifest: %d bytes", len(full.Stdout))
	}
	var tl tools.Tool
	for _, x := range introspect.Tools(v, &introspect.Options{OutputLimit: 300}) {
		if x.Info().Name == introspect.ToolManifest {
			tl = x
		}
	}
	r := tl.Run(t.Context(), tools.Request{Arguments: []byte(`{"include_builtin": true}`)}, nil)
	if !r.StdoutTruncated || r.ExitCode != 0 {
		t.Fatalf("not truncated: %+v", r)
	}
	note := "\n[output truncated: " + jsonOf(t, len(full.Stdout)) + " bytes in all, the first 300 shown]"
	if r.Stdout != full.Stdout[:300]+note {
		t.Errorf("stdout %q; want the first 300 bytes and %q", r.Stdout, note)
	}
}

func TestRunStatus(t *testing.T) {
	_, v, _ := counterWorld(t)
	tl := toolNamed(t, v, introspect.ToolJournalHead)
	var phases []string
	var streamed string
	r := tl.Run(t.Context(), tools.Request{}, func(s tools.Status) {
		phases = append(phases, s.Phase)
		streamed += s.Output
	})
	if got := strings.Join(phases, ","); got != "validate,execute,output,complete" {
		t.Errorf("phases %s", got)
	}
	if streamed != r.Stdout || r.Stdout == "" {
		t.Errorf("streamed %q; stdout %q", streamed, r.Stdout)
	}
	phases = nil
	r = tl.Run(t.Context(), tools.Request{Arguments: []byte(`{"x":1}`)}, func(s tools.Status) { phases = append(phases, s.Phase) })
	if got := strings.Join(phases, ","); got != "validate,complete" || r.ExitCode != 1 {
		t.Errorf("phases %s, exit %d for invalid arguments", got, r.ExitCode)
	}
}
