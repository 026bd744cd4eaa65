package cassette

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/diff"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// A Mismatch is a model call whose request is not the recorded call's:
// the recorded answer was the model's answer to another conversation.
// Its Error renders what differs, part by part, with a line diff of each.
type Mismatch struct {
	// Dir is the cassette's bundle; Call counts the cassette's calls
	// from 1.
	Dir  string
	Call int
	// Parts are the parts of the request that differ, in request order
	// (the system prompt, the tools, the tool choice, the response
	// format, the transcript's items), each with its diff; Total counts
	// them all when only the first few are kept.
	Parts []PartDiff
	Total int
	// Err, if set, says why a request could not be read: the recorded
	// one (a bundle that lacks a blob) or this call's.
	Err error
	// Earlier, when not 0, is the number of transcript items this call's
	// request starts with that the recorded one lacks, the rest being
	// the recorded request: the chat had earlier turns, which the
	// recording did not (it began with a new chat). Parts is then empty.
	Earlier int
	// LooseHint is how the user makes the cassette loose, which Error
	// names: the command and flag of the program that plays it
	// ("demiurge eval --cassette-loose"); "" is DefaultLooseHint.
	LooseHint string
	// Advice, if set, replaces the sentence Error ends with (how to
	// replay the recording, make the cassette loose, or record again):
	// the program's own advice (Options.Advice).
	Advice string
	// World and RecordedWorld, when set, are this run's world and the
	// recording's: a tool output's mention of World is compared as
	// RecordedWorld (Options.World), and shown as it is, which the diff
	// says.
	World, RecordedWorld string
}

// PartDiff is one part of a request that differs from the recorded one.
type PartDiff struct {
	// Part names it: "system prompt", "tool bash", "tool_choice",
	// "response_format", "transcript item 3 (function_call_output
	// call_1)".
	Part string
	// Brief names it in a few words for a one-line notice: "the
	// system prompt", "the tool bash", "a user message", "a tool
	// output", "an extra user message", "a missing tool call".
	Brief string
	// Diff is a unified line diff from the recorded part ("--- recorded")
	// to this call's ("+++ this run"), each rendered as lines of
	// "key: value" (a text with its lines, a JSON text as the JSON it
	// holds); a part one side lacks is "(none)" there.
	Diff string
}

// maxParts is how many differing parts a Mismatch keeps; maxDiffLines
// bounds the lines of each part's diff.
const (
	maxParts     = 3
	maxDiffLines = 40
)

// Error says what differs, and how to replay the recording or go on.
func (m *Mismatch) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cassette %s: model call %d is not the recorded one: ", m.Dir, m.Call)
	if m.Err != nil {
		fmt.Fprintf(&b, "%v", m.Err)
		return b.String()
	}
	if m.Earlier > 0 {
		fmt.Fprintf(&b, "the chat already holds %d transcript %s from earlier turns, which the recording did not: it began with a new chat. "+
			"Run it in a world of its own: leave --world out (demiurge run then picks a new world) or name a new one (--world NAME, agent.WithWorld)", m.Earlier, plural(m.Earlier, "item", "items"))
		return b.String()
	}
	m.parts(&b)
	if m.Advice != "" {
		b.WriteString(m.Advice)
		return b.String()
	}
	fmt.Fprintf(&b, "To replay this recording, send the messages it recorded (demiurge trace %s shows them) in a new world; "+
		"to go on with the recorded answers anyway, use a loose cassette (%s); "+
		"if the tools now say something else, record the session again.", m.Dir, cmp.Or(m.LooseHint, DefaultLooseHint))
	return b.String()
}

// Warning says in one line, for a loose cassette that answers all the
// same, what differs: "cassette DIR: model call 2 differs from the
// recording in a tool output; answering with the recorded answer".
// Diff shows how.
func (m *Mismatch) Warning() string {
	if m.Err != nil {
		return fmt.Sprintf("cassette %s: model call %d cannot be compared with the recording (%v); answering with the recorded answer", m.Dir, m.Call, m.Err)
	}
	if m.Earlier > 0 {
		return fmt.Sprintf("cassette %s: model call %d differs from the recording in the chat's earlier turns (%d transcript %s); answering with the recorded answer",
			m.Dir, m.Call, m.Earlier, plural(m.Earlier, "item", "items"))
	}
	return fmt.Sprintf("cassette %s: model call %d differs from the recording in %s; answering with the recorded answer", m.Dir, m.Call, m.what())
}

// what names the parts that differ in a few words: "a tool output",
// "the system prompt and a user message", "the tool bash, a tool output
// and 2 more parts".
func (m *Mismatch) what() string {
	var briefs []string
	for _, p := range m.Parts {
		if p.Brief != "" && !slices.Contains(briefs, p.Brief) {
			briefs = append(briefs, p.Brief)
		}
	}
	if more := m.Total - len(m.Parts); more > 0 {
		briefs = append(briefs, fmt.Sprintf("%d more %s", more, plural(more, "part", "parts")))
	}
	what := strings.Join(briefs, ", ")
	if n := len(briefs); n > 1 {
		what = strings.Join(briefs[:n-1], ", ") + " and " + briefs[n-1]
	}
	return what
}

// Diff says what differs, part by part, with a line diff of each (or why
// a request could not be read): the detail that Warning leaves out.
func (m *Mismatch) Diff() string {
	if m.Err != nil {
		return m.Err.Error()
	}
	if m.Earlier > 0 {
		return fmt.Sprintf("%d transcript %s from earlier turns before the recorded ones", m.Earlier, plural(m.Earlier, "item", "items"))
	}
	var b strings.Builder
	m.parts(&b)
	return strings.TrimSuffix(b.String(), "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Summary names what differs in one line: the parts, or why a request
// could not be read.
func (m *Mismatch) Summary() string {
	if m.Err != nil {
		return m.Err.Error()
	}
	if m.Earlier > 0 {
		return fmt.Sprintf("%d transcript %s from earlier turns", m.Earlier, plural(m.Earlier, "item", "items"))
	}
	names := make([]string, len(m.Parts))
	for i, p := range m.Parts {
		names[i] = p.Part
	}
	s := strings.Join(names, ", ")
	if m.Total > len(m.Parts) {
		s += fmt.Sprintf(" and %d more", m.Total-len(m.Parts))
	}
	return s
}

// parts writes how many parts differ, and the diffs kept.
func (m *Mismatch) parts(b *strings.Builder) {
	what, verb := "part", "differs"
	if m.Total != 1 {
		what, verb = "parts", "differ"
	}
	fmt.Fprintf(b, "%d %s of its request %s from the recording's", m.Total, what, verb)
	if w := m.what(); w != "" {
		fmt.Fprintf(b, ", %s", w)
	}
	fmt.Fprintf(b, " (the recorded answer answers the recorded request)\n")
	if m.World != "" && len(m.Parts) > 0 {
		fmt.Fprintf(b, "(this run's world %q is compared as the recording's %q: the tools' outputs may name either)\n", m.World, m.RecordedWorld)
	}
	for _, p := range m.Parts {
		fmt.Fprintf(b, "%s:\n%s", p.Part, p.Diff)
	}
	if m.Total > len(m.Parts) {
		fmt.Fprintf(b, "… and %d more\n", m.Total-len(m.Parts))
	}
}

// blobMap is the bundle's blobs as a cas.Getter.
type blobMap map[cas.Ref][]byte

func (m blobMap) Get(_ context.Context, r cas.Ref) ([]byte, error) {
	b, ok := m[r]
	if !ok {
		return nil, fmt.Errorf("blob %s: %w (the bundle does not hold it: export the session again)", r, cas.ErrNotFound)
	}
	return bytes.Clone(b), nil
}

// readRequest reads the llm.Request of params from g.
func readRequest(ctx context.Context, g cas.Getter, params schema.Value) (*llm.Request, error) {
	enc, err := schema.Encode(params)
	if err != nil {
		return nil, err
	}
	var p llm.Params
	if err := cas.Unmarshal(enc, &p); err != nil {
		return nil, fmt.Errorf("decode sys/LlmGenerateParams: %w", err)
	}
	return llm.ReadRequest(ctx, g, p)
}

// check compares the request of a call with params (its blobs in g) with
// the recorded request of answer k; it returns nil when they match.
func (c *Cassette) check(ctx context.Context, k int, recorded schema.Value, g cas.Getter, params schema.Value) *Mismatch {
	m := &Mismatch{Dir: c.dir, Call: k + 1, LooseHint: c.opts.LooseHint, Advice: c.opts.Advice}
	if recorded == nil {
		m.Err = fmt.Errorf("the recording has no request for answer %d", k+1)
		return m
	}
	rec, err := readRequest(ctx, blobMap(c.blobs), recorded)
	if err != nil {
		m.Err = fmt.Errorf("the recorded request cannot be read: %w", err)
		return m
	}
	got, err := readRequest(ctx, g, params)
	if err != nil {
		m.Err = fmt.Errorf("its request cannot be read: %w", err)
		return m
	}
	shown := got // the diff shows this run's request as it is
	if c.world != "" && c.opts.World != "" && c.world != c.opts.World {
		got = renameWorld(got, c.opts.World, c.world)
		m.World, m.RecordedWorld = c.opts.World, c.world
	}
	diffs := compare(rec, got, shown)
	if extra := len(got.Items) - len(rec.Items); len(diffs) > 0 && extra > 0 {
		// The recorded request after earlier turns of the chat: say so,
		// not item by item.
		later := *got
		later.Items = got.Items[extra:]
		if len(compare(rec, &later, &later)) == 0 {
			m.Earlier = extra
			return m
		}
	}
	for _, p := range diffs {
		m.Total++
		if len(m.Parts) < maxParts {
			m.Parts = append(m.Parts, p)
		}
	}
	if m.Total == 0 {
		return nil
	}
	return m
}

// renameWorld returns r with every JSON string "from" in its tools'
// outputs made "to": what a tool says of the world it runs in (its name)
// read as the recording's world.
func renameWorld(r *llm.Request, from, to string) *llm.Request {
	a, _ := json.Marshal(from)
	b, _ := json.Marshal(to)
	// In an output, which is a JSON text in a JSON string, the name's
	// quotes are escaped.
	ea, _ := json.Marshal(string(a))
	eb, _ := json.Marshal(string(b))
	ea, eb = ea[1:len(ea)-1], eb[1:len(eb)-1]
	out := *r
	out.Items = make([]json.RawMessage, len(r.Items))
	for i, it := range r.Items {
		var h struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(it, &h)
		if strings.HasSuffix(h.Type, "_output") {
			it = bytes.ReplaceAll(it, ea, eb)
		}
		out.Items[i] = it
	}
	return &out
}

// part is one part of a request, rendered for comparison; brief names it
// in a few words (PartDiff.Brief).
type part struct {
	key, name, brief string
	// raw is the part's bytes when it has them (a tool, a transcript
	// item): two parts with the same bytes are the same, and are not
	// rendered; render renders it (once, into text) when they differ.
	raw    []byte
	text   string
	render func() string
}

// str returns the part rendered.
func (p *part) str() string {
	if p.render != nil {
		p.text, p.render = p.render(), nil
	}
	return p.text
}

// missing is the brief of a part only one request has: "an extra user
// message", "a missing tool", not "an extra a user message".
func missing(brief, adj string) string {
	for _, article := range []string{"a ", "an ", "the "} {
		if rest, ok := strings.CutPrefix(brief, article); ok {
			return adj + rest
		}
	}
	return adj + brief
}

// compare lists the parts of two requests that differ, in request order.
//
// What is compared, and what may differ:
//
//   - The transcript, item by item: the user's messages, the model's own
//     outputs (which come from the recording), and the tools' outputs,
//     in which refs (blake3:…) are not compared: a tool that reports the
//     journal's head or a state's hash reports what the ingress stamps
//     (the wall clock, the entropy) of this run made. When the cassette
//     is told this run's world (Options.World) and it is not the
//     recording's, a JSON string in a tool output that is this world's
//     name is read as the recording's.
//   - A request that is the recorded one after items the recording lacks
//     (the chat's earlier turns) is said so in a line (Mismatch.Earlier).
//   - The tools, by name: their parameters and other fields, not their
//     descriptions (prose that changes with the code, not the
//     conversation).
//   - The system prompt, up to the first line "# NAME" where NAME is a
//     tool of either request: what follows is the tools' own prompts
//     (the bash tool's lists its commands), compared as descriptions are.
//   - The tool choice and the response format.
//
// The model, the provider and the sampling settings are not compared: a
// cassette answers for any model.
//
// shown is got as the diffs show it: got before what is compared as the
// recording's (this run's world named as the recording's, renameWorld)
// was made so; it has got's parts, with the same keys.
func compare(rec, got, shown *llm.Request) []PartDiff {
	names := map[string]bool{}
	recNames, gotNames := toolNames(rec.Tools), toolNames(got.Tools)
	for _, n := range append(slices.Clip(recNames), gotNames...) {
		names[n] = true
	}
	a, b := parts(rec, recNames, names), parts(got, gotNames, names)
	var out []PartDiff
	seen := map[string]bool{}
	bi := map[string]*part{}
	for i := range b {
		bi[b[i].key] = &b[i]
	}
	show := bi // the parts of shown, by key
	if shown != got {
		sp := parts(shown, toolNames(shown.Tools), names)
		show = make(map[string]*part, len(sp))
		for i := range sp {
			show[sp[i].key] = &sp[i]
		}
	}
	shownStr := func(q *part) string {
		if s, ok := show[q.key]; ok {
			return s.str()
		}
		return q.str()
	}
	add := func(name, brief, x, y string) {
		out = append(out, PartDiff{Part: name, Brief: brief, Diff: lineDiff(x, y)})
	}
	for i := range a {
		p := &a[i]
		seen[p.key] = true
		q, ok := bi[p.key]
		switch {
		case !ok:
			add(p.name, missing(p.brief, "a missing "), p.str(), "(none)\n")
		case p.raw != nil && bytes.Equal(p.raw, q.raw):
			// The same bytes: the same part, not rendered.
		case p.str() != q.str():
			add(q.name, q.brief, p.str(), shownStr(q))
		}
	}
	for i := range b {
		if q := &b[i]; !seen[q.key] {
			add(q.name, missing(q.brief, "an extra "), "(none)\n", shownStr(q))
		}
	}
	return out
}

// toolNames returns the names of tools, in order.
func toolNames(tools []json.RawMessage) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = toolName(t)
	}
	return out
}

// parts renders a request's parts in request order; tools is the names
// of the tools of both requests.
func parts(r *llm.Request, names []string, tools map[string]bool) []part {
	var out []part
	out = append(out, part{key: "instructions", name: "system prompt", brief: "the system prompt", text: text(ownPrompt(r.Instructions, tools))})
	order := make([]int, len(r.Tools))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return names[order[i]] < names[order[j]] })
	for _, i := range order {
		n, t := names[i], r.Tools[i]
		out = append(out, part{key: "tool " + n, name: "tool " + n, brief: "the tool " + n, raw: t,
			render: func() string { return render(stripDescriptions(decode(t))) }})
	}
	if r.ToolChoice != nil {
		out = append(out, part{key: "tool_choice", name: "tool_choice", brief: "the tool choice", text: fmt.Sprintf("%s %s\n", r.ToolChoice.Kind, r.ToolChoice.Name)})
	}
	if f := r.ResponseFormat; f != nil && f.JSONSchema != nil {
		out = append(out, part{key: "response_format", name: "response_format", brief: "the response format",
			text: render(map[string]any{"name": f.JSONSchema.Name, "schema_json": f.JSONSchema.SchemaJSON, "strict": f.JSONSchema.Strict})})
	}
	for i, it := range r.Items {
		var h struct {
			Type   any `json:"type"`
			Role   any `json:"role"`
			CallID any `json:"call_id"`
		}
		_ = json.Unmarshal(it, &h)
		kind, _ := h.Type.(string)
		role, _ := h.Role.(string)
		name := kind
		output := false
		switch {
		case kind == "" || kind == "message":
			name = role + " message"
		case strings.HasSuffix(kind, "_output"):
			output = true
			fallthrough
		default:
			if id, ok := h.CallID.(string); ok {
				name += " " + id
			}
		}
		out = append(out, part{key: "item " + strconv.Itoa(i), name: fmt.Sprintf("transcript item %d (%s)", i+1, name), brief: itemBrief(kind, role), raw: it,
			render: func() string {
				v := decode(it)
				if output {
					v = maskRefs(v)
				}
				return render(v)
			}})
	}
	return out
}

// itemBrief names a transcript item of a type and role in a few words.
func itemBrief(kind, role string) string {
	switch kind {
	case "", "message":
		switch role {
		case "":
			return "a message"
		case "assistant":
			return "a model message"
		}
		return "a " + role + " message"
	case "function_call":
		return "a tool call"
	case "function_call_output":
		return "a tool output"
	}
	return "a transcript item (" + kind + ")"
}

// ownPrompt returns the part of a system prompt before the tools' own:
// up to the first line "# NAME" that names a tool.
func ownPrompt(s string, tools map[string]bool) string {
	at := 0
	for line := range strings.Lines(s) {
		if name, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "# "); ok && tools[strings.TrimSpace(name)] {
			return s[:at] + "[the tools' own prompts: not compared]\n"
		}
		at += len(line)
	}
	return s
}

// toolName returns a tool's name ("" if it has none).
func toolName(raw json.RawMessage) string {
	var h struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &h)
	return h.Name
}

// decode reads JSON into maps, slices and json.Numbers; bytes that are
// not JSON are kept as a string.
func decode(raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return string(raw)
	}
	return v
}

// stripDescriptions drops the text descriptions of a tool and of its
// parameters' schemas (a property named "description" is an object and
// stays).
func stripDescriptions(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if _, isText := e.(string); isText && k == "description" {
				continue
			}
			out[k] = stripDescriptions(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripDescriptions(e)
		}
		return out
	}
	return v
}

// maskRefs replaces every ref in the texts of v by "blake3:…".
func maskRefs(v any) any {
	switch x := v.(type) {
	case string:
		return refPattern().ReplaceAllString(x, "blake3:…")
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = maskRefs(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskRefs(e)
		}
		return out
	}
	return v
}

// text renders a text as its lines.
func text(s string) string {
	if s == "" {
		return "(empty)\n"
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// render writes v as lines for a person and a line diff: an object as
// "key: value" lines in key order (nested ones indented), a list as "-"
// lines, a text that holds a JSON object or list as that JSON, a text of
// several lines as its lines.
func render(v any) string {
	var b strings.Builder
	renderTo(&b, v, "")
	return b.String()
}

func renderTo(b *strings.Builder, v any, indent string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}\n")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		first := true
		for _, k := range keys {
			if !first {
				b.WriteString(indent)
			}
			first = false
			fmt.Fprintf(b, "%s:", k)
			renderValue(b, x[k], indent+"  ")
		}
	case []any:
		if len(x) == 0 {
			b.WriteString("[]\n")
			return
		}
		for i, e := range x {
			if i > 0 {
				b.WriteString(indent)
			}
			b.WriteString("-")
			renderValue(b, e, indent+"  ")
		}
	default:
		b.WriteString(scalar(x) + "\n")
	}
}

// renderValue writes a member's value after its "key:" or "-".
func renderValue(b *strings.Builder, v any, indent string) {
	if s, ok := v.(string); ok {
		t := strings.TrimSpace(s)
		if len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
			if j := decode([]byte(t)); j != nil {
				if _, isText := j.(string); !isText {
					b.WriteString(" (JSON)\n" + indent)
					renderTo(b, j, indent)
					return
				}
			}
		}
		if strings.Contains(s, "\n") {
			b.WriteString(" |\n")
			for line := range strings.Lines(s) {
				b.WriteString(indent + strings.TrimSuffix(line, "\n") + "\n")
			}
			return
		}
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			b.WriteString("\n" + indent)
			renderTo(b, x, indent)
			return
		}
	case []any:
		if len(x) > 0 {
			b.WriteString("\n" + indent)
			renderTo(b, x, indent)
			return
		}
	}
	b.WriteString(" ")
	renderTo(b, v, indent)
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// lineDiff is a unified diff of two renderings, cut at maxDiffLines.
func lineDiff(a, b string) string {
	out := string(diff.Diff("recorded", []byte(a), "this run", []byte(b)))
	if _, rest, ok := strings.Cut(out, "\n"); ok && strings.HasPrefix(out, "diff ") {
		out = rest
	}
	lines := strings.SplitAfter(out, "\n")
	if len(lines) > maxDiffLines {
		n := len(lines) - maxDiffLines
		lines = append(lines[:maxDiffLines], fmt.Sprintf("… (%d more lines of diff)\n", n))
	}
	return strings.Join(lines, "")
}
