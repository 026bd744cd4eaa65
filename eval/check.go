package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

// Check is one check of a case: what it asks of a turn (or of the case,
// once its last turn ended), and where the suite says so.
type Check struct {
	// Kind is the check's kind: answer_contains, tool_called, jq, …
	Kind string
	// Name is what reports call it: the name the file gives, or the
	// check written out ("tool_called workspace_write").
	Name string
	// File, Line and Pointer say where the check is written.
	File    string
	Line    int
	Pointer string
	// Turn is the index of the turn the check is of, or -1 for a check
	// of the whole case (made after the last turn, over all of them).
	Turn int
	spec checker
}

// checker is what a kind of check does with a turn.
type checker interface {
	// check returns "" if the subject passes, or what is wrong with it.
	// An error is a failure to check (a workspace that cannot be read, a
	// judge that did not answer), reported as such.
	check(ctx context.Context, s *subject) (problem string, err error)
}

// subject is what checks look at: one turn, or every turn of a case.
type subject struct {
	// events are the turn's events as demiurge run --json prints them.
	events []agent.Event
	// answer is the turn's answer: the text of the model's last message
	// (agent.TurnEnd.Answer).
	answer  string
	outcome string
	finish  string
	rounds  uint64
	usage   agent.Usage
	tokens  uint64 // in and out
	cost    uint64 // micro-USD
	// costUnknown and usageUnknown count model calls whose cost (usage)
	// is not known.
	costUnknown  uint64
	usageUnknown uint64
	latency      time.Duration
	// calls are the model's tool calls, each followed by the commands its
	// bash script ran (via bash).
	calls []call
	// readFile reads a workspace file as the turn left it (ok false: no
	// such file).
	readFile func(ctx context.Context, ws, path string) (data []byte, ok bool, err error)
	// judge grades the subject against criteria with a model.
	judge func(ctx context.Context, criteria, model string) (pass bool, reason string, err error)
}

// How a tool was called: by the model (direct), or as a command of a
// script the model's bash call ran (bash). A check's via picks either, or
// any.
const (
	viaDirect = "direct"
	viaBash   = "bash"
	viaAny    = "any"
)

// call is a tool call the model made, or a command its script ran, with
// its whole arguments and how it ended.
type call struct {
	tool   string
	args   map[string]any // nil if the arguments are no JSON object
	raw    string
	status string // of ToolCallFinished ("" if it did not finish); of a command, ok or error
	id     string // the model's call (of a command: the script's)
	via    string // viaDirect or viaBash
	in     string // of a command: the tool whose script ran it
}

func (c call) String() string {
	s := c.tool + " " + clip(c.raw, 80)
	if c.via == viaBash {
		s += " (in a " + c.in + " script)"
	}
	return s
}

// parseCheck reads the check at ptr (already valid against the schema).
func parseCheck(d *doc, ptr string, v any, dir string) (*Check, *LoadError) {
	m, _ := v.(map[string]any)
	c := &Check{File: d.file, Pointer: ptr}
	if e := d.errAt(ptr, ""); e != nil {
		c.Line = e.Line
	}
	for _, k := range checkKinds {
		if _, ok := m[k]; ok {
			c.Kind = k
		}
	}
	if n, ok := m["name"].(string); ok {
		c.Name = n
	}
	arg := m[c.Kind]
	at := ptr + "/" + c.Kind
	fail := func(sub, format string, args ...any) *LoadError { return d.errAt(at+sub, format, args...) }
	var auto string
	switch c.Kind {
	case "answer_contains", "answer_not_contains":
		texts := strs(arg)
		c.spec = answerContains{texts: texts, not: c.Kind == "answer_not_contains"}
		auto = c.Kind + " " + quoteList(texts)
	case "answer_matches":
		re, err := regexp.Compile(arg.(string))
		if err != nil {
			return nil, fail("", "not a regular expression (RE2 syntax): %v", err)
		}
		c.spec = answerMatches{re: re}
		auto = "answer_matches " + strconv.Quote(arg.(string))
	case "answer_equals":
		c.spec = answerEquals{text: arg.(string)}
		auto = "answer_equals " + strconv.Quote(clip(arg.(string), 40))
	case "answer_json":
		aj := answerJSON{}
		auto = "answer_json"
		switch x := arg.(type) {
		case bool:
			if !x {
				return nil, fail("", "answer_json: false checks nothing: write answer_json: true, or remove the check")
			}
		case map[string]any:
			sch, hasSchema := x["schema"]
			file, hasFile := x["schema_file"].(string)
			var raw []byte
			switch {
			case hasSchema && hasFile:
				return nil, fail("", "both schema and schema_file: give one")
			case hasSchema:
				raw, _ = json.Marshal(sch)
			case hasFile:
				b, err := readBounded(resolve(dir, file))
				if err != nil {
					return nil, fail("/schema_file", "%v (the path is relative to %s)", err, d.file)
				}
				raw = b
				auto += " " + file
			}
			if raw != nil {
				s, err := compileSchema(raw)
				if err != nil {
					return nil, fail("", "the schema does not compile: %v", err)
				}
				aj.schema = s
			}
		}
		c.spec = aj
	case "file_exists", "file_absent":
		paths := strs(arg)
		for i, p := range paths {
			cp, err := workspace.CleanPath(p)
			if err != nil {
				sub := ""
				if _, list := arg.([]any); list {
					sub = "/" + strconv.Itoa(i)
				}
				return nil, fail(sub, "%v", err)
			}
			paths[i] = cp
		}
		c.spec = fileExists{paths: paths, absent: c.Kind == "file_absent"}
		auto = c.Kind + " " + strings.Join(paths, ", ")
	case "file_equals", "file_contains", "file_matches":
		o := arg.(map[string]any)
		p, err := workspace.CleanPath(o["path"].(string))
		if err != nil {
			return nil, fail("/path", "%v", err)
		}
		ws, _ := o["workspace"].(string)
		if ws == "" {
			ws = "default"
		}
		auto = c.Kind + " " + p
		switch c.Kind {
		case "file_equals":
			content, hasContent := o["content"].(string)
			file, hasFile := o["file"].(string)
			fe := fileEquals{ws: ws, path: p, want: []byte(content)}
			switch {
			case hasContent && hasFile:
				return nil, fail("", "both content and file: give one")
			case hasFile:
				b, err := readBounded(resolve(dir, file))
				if err != nil {
					return nil, fail("/file", "%v (the path is relative to %s)", err, d.file)
				}
				fe.want, fe.from = b, file
			case !hasContent:
				return nil, fail("", "missing content (the file's whole content) or file (a host file holding it)")
			}
			c.spec = fe
		case "file_contains":
			c.spec = fileContains{ws: ws, path: p, texts: strs(o["text"])}
		case "file_matches":
			re, err := regexp.Compile(o["pattern"].(string))
			if err != nil {
				return nil, fail("/pattern", "not a regular expression (RE2 syntax): %v", err)
			}
			c.spec = fileMatches{ws: ws, path: p, re: re}
		}
	case "tool_called", "tool_not_called":
		tc := toolCalled{min: 1, max: -1, via: viaAny}
		if c.Kind == "tool_not_called" {
			tc.min, tc.max = 0, 0
		}
		switch x := arg.(type) {
		case string:
			tc.name = x
		case map[string]any:
			tc.name = x["name"].(string)
			if v, ok := x["via"].(string); ok {
				tc.via = v
			}
			if s, ok := x["status"].(string); ok {
				tc.status = s
			}
			if n, ok := x["min"].(json.Number); ok {
				v, _ := n.Int64()
				tc.min = int(v)
			}
			if n, ok := x["max"].(json.Number); ok {
				v, _ := n.Int64()
				tc.max = int(v)
				if _, hasMin := x["min"]; !hasMin && tc.max == 0 {
					tc.min = 0
				}
			}
			if tc.max >= 0 && tc.min > tc.max {
				return nil, fail("", "min %d is more than max %d: no count of calls passes", tc.min, tc.max)
			}
			if args, ok := x["args"].(map[string]any); ok {
				for _, k := range sortedKeys(args) {
					p, err := parsePredicate(k, args[k])
					if err != nil {
						return nil, fail("/args/"+escapePointer(k), "%v", err)
					}
					tc.args = append(tc.args, p)
				}
			}
		}
		c.spec = tc
		auto = c.Kind + " " + tc.describe()
	case "max_tool_calls":
		mt := maxToolCalls{via: viaDirect}
		switch x := arg.(type) {
		case json.Number:
			v, _ := x.Int64()
			mt.max = int(v)
		case map[string]any:
			v, _ := x["max"].(json.Number).Int64()
			mt.max = int(v)
			mt.tool, _ = x["tool"].(string)
			if mt.tool != "" {
				mt.via = viaAny
			}
			if v, ok := x["via"].(string); ok {
				mt.via = v
			}
		}
		c.spec = mt
		auto = fmt.Sprintf("max_tool_calls %d", mt.max)
		if mt.tool != "" {
			auto += " of " + mt.tool
		}
		if mt.via != viaDirect && mt.tool == "" || mt.via != viaAny && mt.tool != "" {
			auto += " via " + mt.via
		}
	case "outcome":
		c.spec = outcomeIs{want: arg.(string)}
		auto = "outcome " + arg.(string)
	case "finish":
		c.spec = finishIs{want: arg.(string)}
		auto = "finish " + arg.(string)
	case "max_rounds", "max_tokens":
		v, err := arg.(json.Number).Int64()
		if err != nil || v < 1 {
			return nil, fail("", "want a whole number of 1 or more")
		}
		c.spec = bound{what: strings.TrimPrefix(c.Kind, "max_"), max: uint64(v)}
		auto = fmt.Sprintf("%s %d", c.Kind, v)
	case "max_cost_usd":
		f, err := arg.(json.Number).Float64()
		if err != nil {
			return nil, fail("", "want a number of dollars, such as 0.05")
		}
		c.spec = maxCost{micro: uint64(f*1e6 + 0.5)}
		auto = "max_cost_usd " + arg.(json.Number).String()
	case "max_latency":
		dur, err := time.ParseDuration(arg.(string))
		if err != nil {
			return nil, fail("", "%q is not a duration: write it as 300ms, 30s or 2m", arg)
		}
		c.spec = maxLatency{max: dur}
		auto = "max_latency " + dur.String()
	case "jq":
		src := arg.(string)
		q, err := gojq.Parse(src)
		if err != nil {
			return nil, fail("", "not a jq expression: %v", err)
		}
		code, err := gojq.Compile(q, gojq.WithVariables([]string{"$answer"}))
		if err != nil {
			return nil, fail("", "the jq expression does not compile: %v", err)
		}
		c.spec = jqCheck{src: src, code: code}
		auto = "jq " + clip(src, 60)
	case "rubric":
		r := rubric{}
		switch x := arg.(type) {
		case string:
			r.criteria = x
		case map[string]any:
			r.criteria = x["criteria"].(string)
			r.model, _ = x["model"].(string)
		}
		c.spec = r
		auto = "rubric " + strconv.Quote(clip(firstLine(r.criteria), 50))
	default:
		return nil, d.errAt(ptr, "the check names no kind of check; the checks are %s", strings.Join(checkKinds, ", "))
	}
	if c.Name == "" {
		c.Name = auto
	}
	return c, nil
}

// Run makes the check of s: "" if it passes, else what is wrong.
func (c *Check) run(ctx context.Context, s *subject) (string, error) { return c.spec.check(ctx, s) }

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, _ := e.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(clip(s, 40))
	}
	return strings.Join(q, ", ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// preview is how a report quotes a text it shows.
func preview(s string) string {
	if s == "" {
		return "(empty)"
	}
	return strconv.Quote(clip(s, 200))
}

type answerContains struct {
	texts []string
	not   bool
}

func (a answerContains) check(_ context.Context, s *subject) (string, error) {
	for _, t := range a.texts {
		has := strings.Contains(s.answer, t)
		if has == a.not {
			if a.not {
				return fmt.Sprintf("the answer contains %q: %s", t, preview(s.answer)), nil
			}
			return fmt.Sprintf("the answer does not contain %q: %s", t, preview(s.answer)), nil
		}
	}
	return "", nil
}

type answerMatches struct{ re *regexp.Regexp }

func (a answerMatches) check(_ context.Context, s *subject) (string, error) {
	if a.re.MatchString(s.answer) {
		return "", nil
	}
	return fmt.Sprintf("the answer does not match %s: %s", a.re, preview(s.answer)), nil
}

type answerEquals struct{ text string }

func (a answerEquals) check(_ context.Context, s *subject) (string, error) {
	if strings.TrimSpace(s.answer) == strings.TrimSpace(a.text) {
		return "", nil
	}
	return fmt.Sprintf("the answer is %s, want %s", preview(s.answer), preview(a.text)), nil
}

type answerJSON struct{ schema *jsonschema.Schema }

// fenced finds a fenced code block (compiled on first use, not at init).
var fenced = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("(?s)```(?:json)?\\s*\\n(.*?)\\n\\s*```")
})

func (a answerJSON) check(_ context.Context, s *subject) (string, error) {
	text := strings.TrimSpace(s.answer)
	if m := fenced().FindStringSubmatch(text); m != nil {
		text = m[1]
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return fmt.Sprintf("the answer is not JSON (%v): %s", err, preview(s.answer)), nil
	}
	if a.schema == nil {
		return "", nil
	}
	if err := a.schema.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return "the answer's JSON is not valid against the schema: " + strings.ReplaceAll(strings.TrimSpace(ve.Error()), "\n", "; "), nil
		}
		return "the answer's JSON is not valid against the schema: " + err.Error(), nil
	}
	return "", nil
}

func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///eval/answer.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("mem:///eval/answer.schema.json")
}

type fileExists struct {
	paths  []string
	absent bool
}

func (f fileExists) check(ctx context.Context, s *subject) (string, error) {
	for _, p := range f.paths {
		_, ok, err := s.readFile(ctx, "default", p)
		if err != nil {
			return "", err
		}
		if ok == f.absent {
			if f.absent {
				return fmt.Sprintf("the workspace has %s", p), nil
			}
			return fmt.Sprintf("the workspace has no file %s", p), nil
		}
	}
	return "", nil
}

type fileEquals struct {
	ws, path string
	want     []byte
	from     string // the host file the content comes from, if any
}

func (f fileEquals) check(ctx context.Context, s *subject) (string, error) {
	got, ok, err := s.readFile(ctx, f.ws, f.path)
	if err != nil {
		return "", err
	}
	if !ok {
		return fmt.Sprintf("the workspace has no file %s", f.path), nil
	}
	if bytes.Equal(got, f.want) {
		return "", nil
	}
	want := preview(string(f.want))
	if f.from != "" {
		want = f.from + " (" + want + ")"
	}
	return fmt.Sprintf("%s holds %s, want %s", f.path, preview(string(got)), want), nil
}

type fileContains struct {
	ws, path string
	texts    []string
}

func (f fileContains) check(ctx context.Context, s *subject) (string, error) {
	got, ok, err := s.readFile(ctx, f.ws, f.path)
	if err != nil {
		return "", err
	}
	if !ok {
		return fmt.Sprintf("the workspace has no file %s", f.path), nil
	}
	for _, t := range f.texts {
		if !strings.Contains(string(got), t) {
			return fmt.Sprintf("%s does not contain %q: %s", f.path, t, preview(string(got))), nil
		}
	}
	return "", nil
}

type fileMatches struct {
	ws, path string
	re       *regexp.Regexp
}

func (f fileMatches) check(ctx context.Context, s *subject) (string, error) {
	got, ok, err := s.readFile(ctx, f.ws, f.path)
	if err != nil {
		return "", err
	}
	if !ok {
		return fmt.Sprintf("the workspace has no file %s", f.path), nil
	}
	if f.re.Match(got) {
		return "", nil
	}
	return fmt.Sprintf("%s does not match %s: %s", f.path, f.re, preview(string(got))), nil
}

// predicate is a condition on one argument of a tool call.
type predicate struct {
	arg    string
	op     string // equals, contains, matches, exists
	value  any
	re     *regexp.Regexp
	exists bool
}

var predicateOps = []string{"equals", "contains", "matches", "exists"}

func parsePredicate(arg string, v any) (predicate, error) {
	p := predicate{arg: arg, op: "equals", value: normalize(v)}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return p, nil
	}
	for op, x := range m {
		if !slices.Contains(predicateOps, op) {
			return p, nil // an object the argument must equal
		}
		p.op, p.value = op, normalize(x)
		switch op {
		case "contains":
			if _, ok := x.(string); !ok {
				return p, fmt.Errorf("contains: want a text")
			}
		case "matches":
			s, ok := x.(string)
			if !ok {
				return p, fmt.Errorf("matches: want a regular expression")
			}
			re, err := regexp.Compile(s)
			if err != nil {
				return p, fmt.Errorf("matches: not a regular expression (RE2 syntax): %v", err)
			}
			p.re = re
		case "exists":
			b, ok := x.(bool)
			if !ok {
				return p, fmt.Errorf("exists: want true or false")
			}
			p.exists = b
		}
	}
	return p, nil
}

// normalize makes a value of the suite comparable with a value decoded
// from a call's JSON arguments.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func (p predicate) holds(args map[string]any) bool {
	v, ok := args[p.arg]
	switch p.op {
	case "exists":
		return ok == p.exists
	case "equals":
		return ok && reflect.DeepEqual(v, p.value)
	case "contains":
		switch x := v.(type) {
		case string:
			return strings.Contains(x, p.value.(string))
		case []any:
			for _, e := range x {
				if reflect.DeepEqual(e, p.value) {
					return true
				}
			}
		}
		return false
	case "matches":
		s, isStr := v.(string)
		return ok && isStr && p.re.MatchString(s)
	}
	return false
}

func (p predicate) String() string {
	switch p.op {
	case "exists":
		if p.exists {
			return p.arg + " given"
		}
		return p.arg + " not given"
	case "equals":
		b, _ := json.Marshal(p.value)
		return p.arg + " = " + clip(string(b), 60)
	case "contains":
		return fmt.Sprintf("%s containing %q", p.arg, p.value)
	}
	return fmt.Sprintf("%s matching %s", p.arg, p.re)
}

type toolCalled struct {
	name     string
	args     []predicate
	status   string
	via      string // viaAny, viaDirect or viaBash
	min, max int    // max -1: no bound
}

func (t toolCalled) describe() string {
	d := t.name
	var conds []string
	for _, p := range t.args {
		conds = append(conds, p.String())
	}
	if t.status != "" {
		conds = append(conds, "status "+t.status)
	}
	if len(conds) > 0 {
		d += " with " + strings.Join(conds, ", ")
	}
	switch t.via {
	case viaDirect:
		d += " (by the model)"
	case viaBash:
		d += " (in a script)"
	}
	return d
}

// viaMatches reports whether a call made via how is one of via.
func viaMatches(via, how string) bool { return via == "" || via == viaAny || via == how }

func (t toolCalled) matches(c call) bool {
	if c.tool != t.name || !viaMatches(t.via, c.via) {
		return false
	}
	if t.status != "" && c.status != t.status {
		return false
	}
	for _, p := range t.args {
		if !p.holds(c.args) {
			return false
		}
	}
	return true
}

func (t toolCalled) check(_ context.Context, s *subject) (string, error) {
	n := 0
	var same []string // calls of the tool that do not match
	for _, c := range s.calls {
		if t.matches(c) {
			n++
		} else if c.tool == t.name {
			same = append(same, c.String())
		}
	}
	if n >= t.min && (t.max < 0 || n <= t.max) {
		return "", nil
	}
	what := "call of " + t.describe()
	switch {
	case t.max == 0:
		msg := fmt.Sprintf("%s %s: want none", plural(n, "matching call"), "of "+t.describe())
		if n > 0 {
			var made []string
			for _, c := range s.calls {
				if t.matches(c) {
					made = append(made, c.String())
				}
			}
			msg += ": " + strings.Join(made, "; ")
		}
		return msg, nil
	case n < t.min && n == 0:
		msg := "no " + what
		if len(same) > 0 {
			msg += "; the calls of " + t.name + " were: " + strings.Join(same, "; ")
		} else {
			msg += "; " + calledList(s.calls)
		}
		return msg, nil
	case n < t.min:
		return fmt.Sprintf("%s of %s, want at least %d", plural(n, "call"), t.describe(), t.min), nil
	}
	return fmt.Sprintf("%s of %s, want at most %d", plural(n, "call"), t.describe(), t.max), nil
}

// calledList says which tools the model called, and which commands their
// scripts ran: "the model called bash (its script ran workspace_read,
// workspace_write), workspace_edit".
func calledList(calls []call) string {
	if len(calls) == 0 {
		return "the model called no tool"
	}
	var names []string
	for i := 0; i < len(calls); i++ {
		c := calls[i]
		if c.via == viaBash { // a command whose call is not listed: cannot be, but say it
			names = append(names, c.tool+" (in a script)")
			continue
		}
		name := c.tool
		var ran []string
		for i+1 < len(calls) && calls[i+1].via == viaBash && calls[i+1].id == c.id {
			i++
			ran = append(ran, calls[i].tool)
		}
		if len(ran) > 0 {
			name += " (its script ran " + strings.Join(ran, ", ") + ")"
		}
		names = append(names, name)
	}
	return "the model called " + strings.Join(names, ", ")
}

type maxToolCalls struct {
	tool string
	via  string
	max  int
}

func (m maxToolCalls) check(_ context.Context, s *subject) (string, error) {
	n := 0
	for _, c := range s.calls {
		if (m.tool == "" || c.tool == m.tool) && viaMatches(m.via, c.via) {
			n++
		}
	}
	if n <= m.max {
		return "", nil
	}
	of := "tool calls"
	switch {
	case m.tool != "":
		of = "calls of " + m.tool
	case m.via == viaAny:
		of = "tool calls and script commands"
	case m.via == viaBash:
		of = "script commands"
	}
	return fmt.Sprintf("%d %s, want at most %d (%s)", n, of, m.max, strings.TrimPrefix(calledList(s.calls), "the model called ")), nil
}

type outcomeIs struct{ want string }

func (o outcomeIs) check(_ context.Context, s *subject) (string, error) {
	if s.outcome == o.want {
		return "", nil
	}
	return fmt.Sprintf("the turn ended %s, want %s", s.outcome, o.want), nil
}

type finishIs struct{ want string }

func (f finishIs) check(_ context.Context, s *subject) (string, error) {
	if s.finish == f.want {
		return "", nil
	}
	got := s.finish
	if got == "" {
		got = "none (the turn ended " + s.outcome + ")"
	}
	return fmt.Sprintf("the model's finish reason is %s, want %s", got, f.want), nil
}

type bound struct {
	what string // rounds or tokens
	max  uint64
}

func (b bound) check(_ context.Context, s *subject) (string, error) {
	v := s.rounds
	if b.what == "tokens" {
		v = s.tokens
	}
	if v <= b.max {
		return "", nil
	}
	return fmt.Sprintf("%d %s, want at most %d", v, b.what, b.max), nil
}

type maxCost struct{ micro uint64 }

func (m maxCost) check(_ context.Context, s *subject) (string, error) {
	if s.costUnknown > 0 {
		return fmt.Sprintf("the cost of %s is not known (the model's prices are not: demiurge models shows them; --model-option sets them)", plural(int(s.costUnknown), "model call")), nil
	}
	if s.cost <= m.micro {
		return "", nil
	}
	return fmt.Sprintf("cost %s, want at most %s", usd(s.cost), usd(m.micro)), nil
}

type maxLatency struct{ max time.Duration }

func (m maxLatency) check(_ context.Context, s *subject) (string, error) {
	if s.latency <= m.max {
		return "", nil
	}
	return fmt.Sprintf("took %s, want at most %s", s.latency.Round(time.Millisecond), m.max), nil
}

type jqCheck struct {
	src  string
	code *gojq.Code
}

func (j jqCheck) check(ctx context.Context, s *subject) (string, error) {
	in, err := eventsJSON(s.events)
	if err != nil {
		return "", err
	}
	iter := j.code.RunWithContext(ctx, in, s.answer)
	v, ok := iter.Next()
	if !ok {
		return "the jq expression gave no value, want true", nil
	}
	switch x := v.(type) {
	case error:
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return fmt.Sprintf("the jq expression failed: %v", x), nil
	case bool:
		if x {
			return "", nil
		}
		return "the jq expression gave false", nil
	}
	b, _ := gojq.Marshal(v)
	return fmt.Sprintf("the jq expression gave %s, want true or false", clip(string(b), 120)), nil
}

// eventsJSON is the events as jq reads them: an array of the objects
// demiurge run --json prints.
func eventsJSON(events []agent.Event) ([]any, error) {
	out := make([]any, 0, len(events))
	for _, e := range events {
		b, err := agent.MarshalEvent(e)
		if err != nil {
			return nil, err
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jqNumbers(v))
	}
	return out, nil
}

// jqNumbers turns json.Number into the ints and floats gojq takes.
func jqNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jqNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jqNumbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

type rubric struct {
	criteria string
	model    string
}

func (r rubric) check(ctx context.Context, s *subject) (string, error) {
	if s.judge == nil {
		return "", errors.New("no judge to grade the rubric")
	}
	if s.outcome == string(agent.OutcomeFailed) {
		return "not graded: the turn failed", nil
	}
	pass, reason, err := s.judge(ctx, r.criteria, r.model)
	if err != nil {
		return "", err
	}
	if pass {
		return "", nil
	}
	if reason == "" {
		reason = "(no reason given)"
	}
	return "the judge says it fails: " + reason, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// usd writes micro-dollars as dollars.
func usd(micro uint64) string {
	return "$" + strconv.FormatFloat(float64(micro)/1e6, 'f', -1, 64)
}
