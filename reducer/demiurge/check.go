package demiurge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
)

type toolSet struct {
	byName map[string]*toolSpec
	size   int // the tools blob's bytes
	err    error
}

type toolSpec struct {
	spec   tools.SpecTool
	schema *jsonschema.Schema
	err    error // the schema does not compile
}

// check validates one tool call before anything runs: the tool is offered
// and allowed, its arguments (args, parsed from tc.ArgumentsJSON) parse
// and fit the tool's JSON Schema. It returns the request to run, or why
// the call is refused (said to the model, so it can fix the call).
func (r *Reducer) check(s *step, ts *toolSet, tc LlmToolCall, args parsedArgs) (ToolCallRequested, string) {
	t := s.st.Turn
	req := ToolCallRequested{ChatID: s.chat, RequestID: t.RequestID, Round: t.Round, CallID: tc.CallID, Tool: tc.Name}
	if ts.err != nil {
		return req, fmt.Sprintf("error: tool %s cannot run: the tool list is unreadable (%v)", tc.Name, ts.err)
	}
	spec, ok := ts.byName[tc.Name]
	if !ok {
		return req, fmt.Sprintf("error: there is no tool named %q. Available tools: %s. Call one of them by its exact name.", clip(tc.Name, 80), strings.Join(ts.names(), ", "))
	}
	if allow := s.st.Settings.ToolsAllow; allow != nil && !slices.Contains(allow, tc.Name) {
		return req, fmt.Sprintf("error: tool %s is not allowed in this chat (allowed: %s).", tc.Name, strings.Join(allow, ", "))
	}
	if spec.err != nil {
		return req, fmt.Sprintf("error: tool %s cannot run: its input schema does not compile (%v)", tc.Name, spec.err)
	}
	if args.err != nil || args.trailing {
		msg := "trailing data after the object"
		if args.err != nil {
			msg = args.err.Error()
		}
		return req, fmt.Sprintf("error: the arguments of %s are not valid JSON (%s). Send one JSON object that fits the tool's parameters schema.", tc.Name, msg)
	}
	m, isObj := args.value.(map[string]any)
	if !isObj {
		return req, fmt.Sprintf("error: the arguments of %s must be a JSON object, got %s.", tc.Name, jsonKind(args.value))
	}
	if err := spec.schema.Validate(m); err != nil {
		return req, fmt.Sprintf("error: the arguments of %s do not fit its parameters schema: %s. Fix the arguments and call again.", tc.Name, tools.SchemaErrorText(err))
	}
	req.ArgumentsJSON = args.canon
	req.Family = spec.spec.Family
	switch req.Family {
	case tools.FamilyBash:
		script, _ := m["commands"].(string)
		if script == "" {
			script, _ = m["script"].(string)
		}
		req.Script = script
		if n, ok := m["timeout_ms"].(json.Number); ok {
			if v, err := n.Int64(); err == nil && v > 0 {
				u := uint64(v)
				req.TimeoutMS = &u
			}
		}
	case tools.FamilyMCP:
		req.Server, req.ServerTool = spec.spec.Server, spec.spec.ServerTool
	case tools.FamilyIntrospect, tools.FamilyWorkspace, tools.FamilyCustom:
	default:
		return req, fmt.Sprintf("error: tool %s has no known way to run (family %q).", tc.Name, req.Family)
	}
	return req, ""
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// parsedArgs is a call's arguments_json, parsed once for both the repeat
// guard and the check.
type parsedArgs struct {
	value    any    // the first JSON value of the text, numbers as json.Number
	canon    string // value with sorted keys, or the raw text if it does not parse
	err      error  // the text does not start with a JSON value
	trailing bool   // more JSON follows the value
}

func parseArgs(js string) parsedArgs {
	a := parsedArgs{canon: js}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	if a.err = dec.Decode(&a.value); a.err != nil {
		return a
	}
	a.trailing = dec.More()
	if b, err := json.Marshal(a.value); err == nil {
		a.canon = string(b)
	}
	return a
}

// toolSet returns the compiled tool specs of the chat's tools blob.
func (r *Reducer) toolSet(s *step) *toolSet {
	ref := s.st.Settings.ToolsRef
	if ref == nil {
		return &toolSet{byName: map[string]*toolSpec{}}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ts, ok := r.specs[*ref]; ok {
		return ts
	}
	ts := &toolSet{byName: map[string]*toolSpec{}}
	b, err := s.c.CAS.Get(bgctx(), *ref)
	ts.size = len(b)
	if err == nil {
		var specs []tools.SpecTool
		specs, err = tools.DecodeSpec(b)
		for _, sp := range specs {
			ts.byName[sp.Name] = compileSpec(sp)
		}
	}
	ts.err = err
	if r.specs == nil {
		r.specs = map[cas.Ref]*toolSet{}
	}
	r.specs[*ref] = ts
	return ts
}

func compileSpec(sp tools.SpecTool) *toolSpec {
	t := &toolSpec{spec: sp}
	if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(sp.Parameters)); err != nil {
		t.err = err
		return t
	}
	// Compiled once per process for each tool and schema (a pure
	// function of them: the same schema, or the same error, each time).
	t.schema, t.err = tools.CompileSchema("mem://tools/"+sp.Name+".json", sp.Parameters)
	return t
}

func (ts *toolSet) names() []string {
	out := make([]string, 0, len(ts.byName))
	for n := range ts.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
