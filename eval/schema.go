package eval

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/internal/jsonschema/kind"
)

// CaseSchema is the JSON Schema of a case file (draft 2020-12), as
// published in docs/eval-case.schema.json.
//
//go:embed case.schema.json
var CaseSchema []byte

// SuiteSchema is the JSON Schema of a suite's suite.yaml, as published
// in docs/eval-suite.schema.json.
//
//go:embed suite.schema.json
var SuiteSchema []byte

const (
	caseSchemaURL  = "https://github.com/demiurge-dev/demiurge/docs/eval-case.schema.json"
	suiteSchemaURL = "https://github.com/demiurge-dev/demiurge/docs/eval-suite.schema.json"
)

type schemas struct {
	caseS, suiteS *jsonschema.Schema
	// raw are the schema documents, to look up what a location allows.
	raw map[string]any
}

var compiled = sync.OnceValues(func() (*schemas, error) {
	c := jsonschema.NewCompiler()
	raw := map[string]any{}
	for u, b := range map[string][]byte{caseSchemaURL: CaseSchema, suiteSchemaURL: SuiteSchema} {
		d, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("eval: schema %s: %w", u, err)
		}
		raw[u] = d
		if err := c.AddResource(u, d); err != nil {
			return nil, fmt.Errorf("eval: schema %s: %w", u, err)
		}
	}
	s := &schemas{raw: raw}
	var err error
	if s.caseS, err = c.Compile(caseSchemaURL); err != nil {
		return nil, fmt.Errorf("eval: compile the case schema: %w", err)
	}
	if s.suiteS, err = c.Compile(suiteSchemaURL); err != nil {
		return nil, fmt.Errorf("eval: compile the suite schema: %w", err)
	}
	return s, nil
})

// validate checks d against the case schema (or the suite's), and says
// what is wrong in terms of the file.
func validate(d *doc, suite bool) LoadErrors {
	s, err := compiled()
	if err != nil {
		return LoadErrors{{File: d.file, Msg: err.Error()}}
	}
	sch := s.caseS
	if suite {
		sch = s.suiteS
	}
	// The validator wants the values its own decoder makes.
	b, err := json.Marshal(d.value)
	if err != nil {
		return LoadErrors{{File: d.file, Msg: err.Error()}}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return LoadErrors{{File: d.file, Msg: err.Error()}}
	}
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	ve, ok := verr.(*jsonschema.ValidationError)
	if !ok {
		return LoadErrors{{File: d.file, Msg: verr.Error()}}
	}
	t := &translator{d: d, s: s, seen: map[string]bool{}}
	t.walk(ve)
	t.drop()
	sort.SliceStable(t.errs, func(i, j int) bool {
		a, b := t.errs[i], t.errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return t.errs
}

// translator turns a validation error tree into messages a person acts
// on: one per problem, at the place in the file.
type translator struct {
	d    *doc
	s    *schemas
	errs LoadErrors
	// unknown notes the values that had an unknown field: a check whose
	// kind is misspelled is not also said to name no kind.
	unknown map[string]bool
	seen    map[string]bool
	oneOf   []*LoadError // said only if their value has no unknown field
	ptrs    []string
}

func pointer(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var b strings.Builder
	for _, t := range loc {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

func (t *translator) add(e *LoadError) {
	key := e.Pointer + "\x00" + e.Msg
	if t.seen[key] {
		return
	}
	t.seen[key] = true
	t.errs = append(t.errs, e)
}

func (t *translator) walk(e *jsonschema.ValidationError) {
	ptr := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Group, *kind.Schema, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			t.walk(c)
		}
	case *kind.AdditionalProperties:
		if t.unknown == nil {
			t.unknown = map[string]bool{}
		}
		t.unknown[ptr] = true
		allowed := t.allowed(e.SchemaURL)
		for _, p := range k.Properties {
			t.add(t.d.keyAt(ptr+"/"+escapePointer(p), "%s", unknownField(p, allowed, isCheck(ptr))))
		}
	case *kind.OneOf:
		at := t.d.errAt(ptr, "%s", t.oneOfMsg(ptr, k))
		if m, _ := valueAt(t.d.value, ptr).(map[string]any); ptr == "" && m["turns"] != nil && m["user"] != nil {
			at = t.d.keyAt("/turns", "%s", at.Msg)
		}
		t.oneOf = append(t.oneOf, at)
		t.ptrs = append(t.ptrs, ptr)
	case *kind.Required:
		for _, m := range k.Missing {
			t.add(t.d.errAt(ptr, "missing %s%s", m, requiredHint(ptr, m)))
		}
	case *kind.Type:
		t.add(t.d.errAt(ptr, "%s, want %s", article(k.Got), wants(k.Want)))
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		msg := fmt.Sprintf("%v is not one of %s", k.Got, strings.Join(want, ", "))
		if g, ok := k.Got.(string); ok {
			if c := closest(g, want); c != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", c)
			}
		}
		t.add(t.d.errAt(ptr, "%s", msg))
	case *kind.Pattern:
		t.add(t.d.errAt(ptr, "%s", patternMsg(k.Got, k.Want)))
	case *kind.MinLength:
		t.add(t.d.errAt(ptr, "is empty: write the text"))
	case *kind.MinItems:
		t.add(t.d.errAt(ptr, "is an empty list: give at least %d item", k.Want))
	case *kind.MinProperties:
		t.add(t.d.errAt(ptr, "is empty: give at least %d field", k.Want))
	case *kind.UniqueItems:
		t.add(t.d.errAt(ptr, "items %d and %d are the same: list each once", k.Duplicates[0], k.Duplicates[1]))
	case *kind.Not:
		if ptr == "" {
			t.add(t.d.keyAt("/models", "%s", notMsg(ptr)))
			break
		}
		t.add(t.d.errAt(ptr, "%s", notMsg(ptr)))
	case *kind.Minimum:
		t.add(t.d.errAt(ptr, "%s is below %s, the least allowed", k.Got.RatString(), k.Want.RatString()))
	default:
		t.add(t.d.errAt(ptr, "%s", e.ErrorKind.Message()))
	}
}

// drop adds the oneOf errors whose value has no unknown field (that error
// says it better).
func (t *translator) drop() {
	for i, e := range t.oneOf {
		if !t.unknown[t.ptrs[i]] {
			t.add(e)
		}
	}
}

// allowed returns the properties the object schema at the location of an
// additionalProperties error names.
func (t *translator) allowed(schemaURL string) []string {
	u, err := url.Parse(schemaURL)
	if err != nil {
		return nil
	}
	frag := u.Fragment
	u.Fragment = ""
	var node any = t.s.raw[u.String()]
	toks := strings.Split(strings.TrimPrefix(frag, "/"), "/")
	if len(toks) > 0 && toks[len(toks)-1] == "additionalProperties" {
		toks = toks[:len(toks)-1]
	}
	for _, tok := range toks {
		if tok == "" {
			continue
		}
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[unescapePointer(tok)]
	}
	m, _ := node.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	return sortedKeys(props)
}

// isCheck reports whether ptr names a check: /checks/N or
// /turns/N/checks/M.
func isCheck(ptr string) bool {
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	n := len(toks)
	return n >= 2 && toks[n-2] == "checks"
}

// checkKinds are the kinds of check, in the schema's order.
var checkKinds = []string{
	"answer_contains", "answer_not_contains", "answer_matches", "answer_equals", "answer_json",
	"file_exists", "file_absent", "file_equals", "file_contains", "file_matches",
	"tool_called", "tool_not_called", "max_tool_calls", "outcome", "finish",
	"max_rounds", "max_tokens", "max_cost_usd", "max_latency", "jq", "rubric",
}

func unknownField(p string, allowed []string, check bool) string {
	if check {
		kinds := slices.DeleteFunc(slices.Clone(allowed), func(s string) bool { return s == "name" })
		msg := fmt.Sprintf("unknown check %q", p)
		if c := closest(p, kinds); c != "" {
			return msg + fmt.Sprintf(" (did you mean %s?)", c)
		}
		return msg + "; the checks are " + strings.Join(checkKinds, ", ")
	}
	msg := fmt.Sprintf("unknown field %q", p)
	if c := closest(p, allowed); c != "" {
		return msg + fmt.Sprintf(" (did you mean %s?)", c)
	}
	if len(allowed) > 0 {
		return msg + "; the fields here are " + strings.Join(allowed, ", ")
	}
	return msg
}

func (t *translator) oneOfMsg(ptr string, k *kind.OneOf) string {
	v := valueAt(t.d.value, ptr)
	m, _ := v.(map[string]any)
	if isCheck(ptr) {
		var kinds []string
		for _, key := range sortedKeys(m) {
			if slices.Contains(checkKinds, key) {
				kinds = append(kinds, key)
			}
		}
		if len(kinds) > 1 {
			return fmt.Sprintf("one check names %s: write each as a check of its own (- %s: …)", strings.Join(kinds, " and "), kinds[1])
		}
		return "the check names no kind of check; the checks are " + strings.Join(checkKinds, ", ")
	}
	if ptr == "" {
		_, user := m["user"]
		_, turns := m["turns"]
		if user && turns {
			return "both user and turns: give user for a case of one turn, or turns (each with its user), not both"
		}
		return "no user message: give user (the message of a case of one turn) or turns (a list of {user, checks})"
	}
	return k.Message()
}

func notMsg(ptr string) string {
	if ptr == "" {
		return "both model and models: give model (one) or models (a list), not both"
	}
	return "this value is not allowed here"
}

func requiredHint(ptr, field string) string {
	switch field {
	case "user":
		return " (the message the turn sends)"
	case "name":
		return " (the tool's name)"
	case "path":
		return " (the file's path in the workspace)"
	case "max":
		return " (the most calls allowed)"
	case "criteria":
		return " (what a good turn does, for the judge)"
	case "pattern":
		return " (a regular expression)"
	case "text":
		return " (the text the file must contain)"
	}
	return ""
}

func patternMsg(got, pattern string) string {
	switch {
	case strings.Contains(pattern, "ns|us"):
		return fmt.Sprintf("%q is not a duration: write it as 300ms, 30s, 2m or 1h30m", got)
	case strings.Contains(pattern, "A-Za-z0-9._-"):
		return fmt.Sprintf("%q: use letters, digits, '.', '_' and '-', starting with a letter or digit", got)
	}
	return fmt.Sprintf("%q does not match %s", got, pattern)
}

func article(typ string) string {
	switch typ {
	case "null":
		return "empty (null)"
	case "object", "array", "integer":
		if typ == "object" {
			return "a map"
		}
		if typ == "array" {
			return "a list"
		}
		return "an integer"
	}
	return "a " + typ
}

func wants(w []string) string {
	out := make([]string, len(w))
	for i, t := range w {
		out[i] = article(t)
	}
	if len(out) == 1 {
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " or " + out[len(out)-1]
}

// valueAt returns the value a JSON pointer names in v, or nil.
func valueAt(v any, ptr string) any {
	if ptr == "" || ptr == "/" {
		return v
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = unescapePointer(tok)
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			var i int
			if _, err := fmt.Sscan(tok, &i); err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}
