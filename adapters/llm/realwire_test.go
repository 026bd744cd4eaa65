package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/realwire"
)

var update = flag.Bool("update", false, "rewrite the golden files of the real recordings")

// TestRealwire runs every recording of real provider traffic in
// testdata/realwire, and in the extended corpus when DEMIURGE_REALWIRE
// names it (see the README in each for their sources), through the
// adapter:
//
//   - each recorded response is served to Generate, for a request built
//     from the recorded one, and what Generate makes of it (text, calls,
//     reasoning, usage, finish, or the error by class) must equal the
//     reviewed golden file beside the recording (-update rewrites it);
//   - each request demiurge builds is compared, field by field, with the
//     recorded request the provider accepted: for the first turn of a
//     conversation, from the recorded transcript; for each later turn,
//     from the transcript as demiurge keeps it — the earlier turn's
//     items, the output Generate recorded for the provider's answer, and
//     the tool outputs the next recorded request carries — so that the
//     round trip (function call and output pairing, reasoning items,
//     DeepSeek's reasoning_content) is what the provider accepted.
func TestRealwire(t *testing.T) {
	recs, extended, err := realwire.LoadCorpus(filepath.Join("testdata", "realwire"))
	if err != nil {
		t.Fatal(err)
	}
	compared, followUps := 0, 0
	for _, rec := range recs {
		t.Run(rec.Name, func(t *testing.T) {
			var golden []any
			var prev *turnResult
			for i, it := range rec.Interactions {
				res := runRecorded(t, rec, i, prev)
				golden = append(golden, res.summary)
				if res.compared {
					compared++
					if res.followUp {
						followUps++
					}
				}
				for _, d := range res.diffs {
					t.Errorf("interaction %d: the request demiurge builds differs from the one %s accepted: %s", i, rec.Vendor, d)
				}
				prev = nil
				if it.Response.StatusCode() == 200 && res.output != nil {
					prev = res
				}
			}
			checkGolden(t, strings.TrimSuffix(rec.File, ".json")+".golden", golden)
		})
	}
	t.Logf("%d recordings (extended corpus: %v), %d requests compared (%d follow-up turns)", len(recs), extended, compared, followUps)
	// The corpus is only as good as what it covers.
	want, wantFollowUps := 25, 10 // the repository's recordings
	if extended {
		want, wantFollowUps = 120, 45 // the 63 recordings of the manifest (internal/realwire/mkcorpus): 133 and 53
	}
	if compared < want || followUps < wantFollowUps {
		t.Errorf("%d requests compared (%d follow-up turns); want at least %d (%d)", compared, followUps, want, wantFollowUps)
	}
}

// turnResult is what one recorded interaction gave.
type turnResult struct {
	summary  any
	items    []json.RawMessage // the transcript sent
	recorded int               // how many items the recorded request had
	output   []byte            // the output blob Generate recorded
	diffs    []string          // differences from the accepted request
	compared bool              // the request was compared with an accepted one
	followUp bool              // its transcript came from the previous turn
}

// runRecorded runs interaction i of rec.
func runRecorded(t *testing.T, rec *realwire.Recording, i int, prev *turnResult) *turnResult {
	t.Helper()
	it := rec.Interactions[i]
	provider := map[string]string{"responses": ProviderResponses, "chat": ProviderChat,
		"anthropic": ProviderAnthropic, "gemini": ProviderGemini}[rec.API]
	var turn realwire.Turn
	if it.Request != nil {
		var err error
		if turn, err = it.Request.Turn(rec.API); err != nil {
			t.Fatalf("interaction %d: %v", i, err)
		}
	} else {
		// Only the response was recorded.
		turn = realwire.Turn{Model: "gpt-4o", Items: []json.RawMessage{json.RawMessage(`{"role":"user","content":"hi"}`)}, Stream: it.Response.IsStream()}
	}
	res := &turnResult{items: turn.Items, recorded: len(turn.Items)}
	if prev != nil {
		// The next turn of the conversation, from the transcript as
		// demiurge keeps it: the previous turn's items, the output
		// recorded for its answer, and what the recorded request adds
		// after the model's output (the tool outputs, a new message).
		n := prev.recorded
		if len(turn.Items) > n && realwire.IsModelOutput(turn.Items[n]) {
			j := n
			for j < len(turn.Items) && realwire.IsModelOutput(turn.Items[j]) {
				j++
			}
			items := append(slices.Clone(prev.items), json.RawMessage(prev.output))
			// The tool outputs name the calls by the ids the recorded
			// client gave them; demiurge's output has the provider's (or
			// its own, where the provider gave none): pair them in order.
			ids := map[string]string{}
			ours := callIDs(prev.output)
			for k, id := range callIDs(turn.Items[n:j]...) {
				if k < len(ours) {
					ids[id] = ours[k]
				}
			}
			for _, it := range turn.Items[j:] {
				items = append(items, renameCall(it, ids))
			}
			res.items = items
			res.followUp = true
		}
	}

	st := newStore()
	p := Params{Provider: provider, Model: turn.Model, MaxTokens: turn.MaxTokens, Instructions: turn.Instructions,
		Temperature: turn.Temperature, ReasoningEffort: turn.ReasoningEffort}
	for _, item := range res.items {
		p.MessageRefs = append(p.MessageRefs, st.put(t, string(item)))
	}
	if turn.Tools != nil {
		ref := st.put(t, string(turn.Tools))
		p.ToolsRef = &ref
	}
	switch c := turn.ToolChoice; c {
	case "":
	case "auto", "none", "required":
		p.ToolChoice = &ToolChoice{Kind: map[string]ToolChoiceKind{"auto": ToolChoiceAuto, "none": ToolChoiceNone, "required": ToolChoiceRequired}[c]}
	default:
		p.ToolChoice = &ToolChoice{Kind: ToolChoiceTool, Name: c}
	}
	srv := realwire.NewServer([]realwire.Response{it.Response})
	defer srv.Close()
	base := srv.URL
	if isNative(provider) {
		base = srv.Root
	}
	// The loopback server stands for the vendor's: its prices, its rules.
	server := rec.Vendor
	if server == "other" {
		server = ""
	}
	g, err := New(Config{Provider: provider, BaseURL: base, Server: server, MaxAttempts: 1, Backoff: func(int) time.Duration { return 0 }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	var deltas strings.Builder
	var onDelta func(string)
	if turn.Stream {
		onDelta = func(s string) { deltas.WriteString(s) }
	}
	r, err := g.Generate(t.Context(), st, p, "", onDelta)
	res.summary = summarize(t, st, r, err, turn.Stream, deltas.String(), srv.URL)

	sent := srv.Requests()
	if len(sent) == 1 && it.Request != nil && it.Response.StatusCode() == 200 {
		res.compared = true
		if isNative(provider) {
			res.diffs = compareNative(rec, it.Request.Body, sent[0])
		} else {
			res.diffs = compareRequests(rec, g, turn.Model, it.Request.Body, sent[0])
		}
	}
	if err == nil {
		res.output = []byte(st.get(t, r.OutputRef))
	}
	return res
}

// summary is what the golden file keeps of one interaction.
type summary struct {
	Text       string      `json:"text,omitempty"`
	Streamed   string      `json:"streamed,omitempty"` // the deltas, where they differ from the text
	Calls      []ToolCall  `json:"calls,omitempty"`
	Reasoning  []string    `json:"reasoning,omitempty"` // summaries and text, in order
	Usage      *TokenUsage `json:"usage"`               // nil: unknown
	CostMicro  *uint64     `json:"cost_microusd"`       // nil: unknown
	CostSource string      `json:"cost_source,omitempty"`
	Finish     string      `json:"finish,omitempty"`
	Model      string      `json:"model,omitempty"`
	ProviderID string      `json:"provider_id,omitempty"`
	Error      *errorSum   `json:"error,omitempty"`
}

type errorSum struct {
	Kind      ErrorKind `json:"kind"`
	Status    int       `json:"status"`
	Retryable bool      `json:"retryable"`
	Message   string    `json:"message"`
}

func summarize(t *testing.T, st *memStore, r Receipt, err error, stream bool, deltas, baseURL string) summary {
	t.Helper()
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), baseURL, "BASE_URL") // the port differs from run to run
		var pe *ProviderError
		if !errors.As(err, &pe) {
			return summary{Error: &errorSum{Kind: "not a provider error", Message: msg}}
		}
		return summary{Error: &errorSum{Kind: pe.Kind, Status: pe.Status, Retryable: pe.Retryable, Message: msg}}
	}
	s := summary{Text: r.OutputText, Finish: r.FinishReason, Model: r.Model, ProviderID: r.ProviderID}
	if stream && deltas != r.OutputText {
		s.Streamed = deltas
	}
	if r.UsageKnown {
		u := r.TokenUsage
		s.Usage = &u
	}
	if r.CostKnown {
		c := r.CostMicroUSD
		s.CostMicro, s.CostSource = &c, r.CostSource.String()
	}
	for _, ref := range r.ToolCallRefs {
		var tc ToolCall
		if err := cas.GetNode(t.Context(), st, ref, &tc); err != nil {
			t.Fatal(err)
		}
		s.Calls = append(s.Calls, tc)
	}
	var items []OutputItem
	if err := cas.GetNode(t.Context(), st, *r.OutputItemsRef, &items); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Reasoning != nil {
			s.Reasoning = append(s.Reasoning, it.Reasoning.Summary...)
			if it.Reasoning.Text != nil {
				s.Reasoning = append(s.Reasoning, *it.Reasoning.Text)
			}
		}
	}
	return s
}

// checkGolden compares got with the golden file, or writes it with
// -update.
func checkGolden(t *testing.T, path string, got []any) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestRealwire -update, and review the file)", err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Errorf("what the adapter makes of the recording differs from %s (run with -update and review the diff):\n%s", path, goldenDiff(want, b.Bytes()))
	}
}

// goldenDiff says where got differs from a golden file want: the lines
// that differ (want, then got) when both have as many lines, as a change
// of wording or a figure does, at most 20 of them; else all of got.
func goldenDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	if len(w) != len(g) {
		return fmt.Sprintf("the golden file has %d lines, the adapter's output %d:\n%s", len(w), len(g), got)
	}
	var out strings.Builder
	n := 0
	for i := range w {
		if w[i] == g[i] {
			continue
		}
		if n++; n > 20 {
			out.WriteString("…\n")
			break
		}
		fmt.Fprintf(&out, "line %d:\n- %s\n+ %s\n", i+1, w[i], g[i])
	}
	return out.String()
}

// compareRequests compares the request demiurge sent with the one the
// provider accepted, on every field the providers validate, and returns
// the differences. Where clients may choose differently and a provider
// takes either, the comparison allows it: call ids renamed consistently
// (the provider only checks that a call and its output pair up), a call's
// arguments re-encoded, an assistant's text and calls in one message or
// two, reasoning a client put back inside <think> tags, and the fields a
// provider takes but does not require. What providers refuse is checked
// by their own rules, each seen in a recorded refusal:
//
//   - OpenAI and Azure refuse max_tokens for reasoning models
//     ("Unsupported parameter: 'max_tokens' … Use 'max_completion_tokens'
//     instead"), a temperature for them, and include:[reasoning.encrypted_content]
//     for models that do not reason;
//   - DeepSeek refuses a tool-calling conversation whose assistant
//     messages lack their reasoning_content ("The reasoning_content in the
//     thinking mode must be passed back to the API").
func compareRequests(rec *realwire.Recording, g *Generator, model string, accepted, sent []byte) []string {
	api, vendor := rec.API, rec.Vendor
	var a, s map[string]any
	if err := json.Unmarshal(accepted, &a); err != nil {
		return []string{"the accepted request is not JSON: " + err.Error()}
	}
	if err := json.Unmarshal(sent, &s); err != nil {
		return []string{"the sent request is not JSON: " + err.Error()}
	}
	var diffs []string
	d := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	has := func(m map[string]any, k string) bool { v, ok := m[k]; return ok && v != nil }

	// Settings a model refuses when they do not fit it: what demiurge
	// sends, the provider accepted.
	for _, k := range []string{"temperature", "reasoning_effort", "include"} {
		if has(s, k) && !has(a, k) {
			d("%s sent, but the accepted request had none (%s: %v)", k, k, s[k])
		}
	}
	if r, ok := s["reasoning"].(map[string]any); ok && has(r, "effort") {
		if ar, _ := a["reasoning"].(map[string]any); !has(ar, "effort") {
			d("reasoning.effort sent, but the accepted request had none")
		}
	}
	// The reply's cap is sent when it was, in a field the provider takes.
	limit := func(m map[string]any) (string, any) {
		for _, k := range []string{"max_output_tokens", "max_completion_tokens", "max_tokens"} {
			if has(m, k) {
				return k, m[k]
			}
		}
		return "", nil
	}
	ak, av := limit(a)
	sk, sv := limit(s)
	switch {
	case (ak == "") != (sk == ""):
		d("token limit %s %v; accepted %s %v", sk, sv, ak, av)
	case ak != sk && (vendor == "openai" || vendor == "azure"):
		d("token limit in %s; OpenAI accepted %s", sk, ak)
	}
	// A stateless call that replays reasoning asks for it as the accepted
	// one did.
	if inc, _ := a["include"].([]any); slices.Contains(inc, any("reasoning.encrypted_content")) {
		if m, _ := g.ModelFor(model); m.EncryptedReasoning && !reflect.DeepEqual(s["include"], a["include"]) {
			d("include %v; accepted %v", s["include"], a["include"])
		}
	}
	if (a["stream"] == true) != (s["stream"] == true) {
		d("stream %v; accepted %v", s["stream"], a["stream"])
	}
	if !sameToolChoice(a["tool_choice"], s["tool_choice"]) {
		d("tool_choice %v; accepted %v", s["tool_choice"], a["tool_choice"])
	}
	if at, st := toolsOf(a["tools"]), toolsOf(s["tools"]); !reflect.DeepEqual(at, st) {
		d("tools %v; accepted %v", st, at)
	}
	// What the provider refuses, by the rules its recorded refusals show.
	if err := rec.Refuse(sent); err != nil {
		d("the provider would refuse it: %v", err)
	}
	ids := idMap{}
	if api == "chat" {
		diffs = append(diffs, compareMessages(a["messages"], s["messages"], ids)...)
	} else {
		diffs = append(diffs, compareInput(a["input"], s["input"], ids)...)
	}
	return diffs
}

// idMap pairs the call ids of an accepted request with those sent: a
// provider checks only that each output names its call, so a client may
// choose them (ids a provider left out, or pydantic-ai sending a call's
// item id).
type idMap map[any]any

// same reports whether sent may stand for accepted, pairing them the first
// time and holding them to it after.
func (m idMap) same(accepted, sent any) bool {
	if accepted == sent {
		return true
	}
	if prev, ok := m[accepted]; ok {
		return prev == sent
	}
	for _, v := range m {
		if v == sent {
			return false
		}
	}
	m[accepted] = sent
	return true
}

// sameArguments compares a call's arguments as JSON values (a client may
// re-encode them), or as text if they are not JSON.
func sameArguments(a, s any) bool {
	as, _ := a.(string)
	ss, _ := s.(string)
	var av, sv any
	if json.Unmarshal([]byte(as), &av) != nil || json.Unmarshal([]byte(ss), &sv) != nil {
		return as == ss
	}
	return reflect.DeepEqual(av, sv)
}

// sameToolChoice compares tool choices ("auto", or a function by name, in
// either API's shape).
func sameToolChoice(a, s any) bool {
	name := func(v any) any {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		if n, ok := m["name"]; ok {
			return n
		}
		if f, ok := m["function"].(map[string]any); ok {
			return f["name"]
		}
		return v
	}
	if a == nil {
		return s == nil || s == "auto" // auto is the default when tools are sent
	}
	return reflect.DeepEqual(name(a), name(s))
}

// toolsOf returns each function tool's name and parameters, in order.
func toolsOf(v any) []any {
	list, _ := v.([]any)
	var out []any
	for _, t := range list {
		m, _ := t.(map[string]any)
		if f, ok := m["function"].(map[string]any); ok {
			m = f
		}
		params := m["parameters"]
		if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out = append(out, []any{m["name"], params})
	}
	return out
}

// textOf returns a content's text: a string, or its text parts joined,
// without the reasoning a client put back inside <think> tags.
func textOf(v any) string {
	var t string
	switch c := v.(type) {
	case string:
		t = c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		t = b.String()
	}
	for {
		i := strings.Index(t, "<think>")
		j := strings.Index(t, "</think>")
		if i < 0 || j < i {
			return strings.TrimSpace(t)
		}
		t = t[:i] + t[j+len("</think>"):]
	}
}

// mergeAssistant joins an assistant message that has only text with the
// assistant message of tool calls after it: one message or two, a
// provider takes either.
func mergeAssistant(ms []any) []any {
	var out []any
	for _, x := range ms {
		m, _ := x.(map[string]any)
		if n := len(out); n > 0 && m["role"] == "assistant" {
			if p, _ := out[n-1].(map[string]any); p["role"] == "assistant" && p["tool_calls"] == nil {
				merged := map[string]any{}
				for k, v := range m {
					merged[k] = v
				}
				merged["content"] = textOf(p["content"]) + textOf(m["content"])
				out[n-1] = merged
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// compareMessages compares Chat Completions messages: roles in order,
// texts, tool calls, tool call ids, and the reasoning the accepted
// request sent back (its fields, and the tool calls' extra_content).
func compareMessages(av, sv any, ids idMap) []string {
	al, _ := av.([]any)
	sl, _ := sv.([]any)
	a, s := mergeAssistant(al), mergeAssistant(sl)
	var diffs []string
	if len(a) != len(s) {
		return []string{fmt.Sprintf("%d messages; accepted %d (roles %v; accepted %v)", len(s), len(a), roles(s), roles(a))}
	}
	for i := range a {
		am, _ := a[i].(map[string]any)
		sm, _ := s[i].(map[string]any)
		where := fmt.Sprintf("message %d (%v)", i, am["role"])
		ar, sr := am["role"], sm["role"]
		if ar == "developer" {
			ar = "system"
		}
		if ar != sr {
			diffs = append(diffs, fmt.Sprintf("%s: role %v", where, sr))
			continue
		}
		if textOf(am["content"]) != textOf(sm["content"]) {
			diffs = append(diffs, fmt.Sprintf("%s: content %q; accepted %q", where, textOf(sm["content"]), textOf(am["content"])))
		}
		if am["tool_call_id"] != nil && !ids.same(am["tool_call_id"], sm["tool_call_id"]) {
			diffs = append(diffs, fmt.Sprintf("%s: tool_call_id %v; accepted %v", where, sm["tool_call_id"], am["tool_call_id"]))
		}
		ac, sc := callsOf(am), callsOf(sm)
		if len(ac) != len(sc) {
			diffs = append(diffs, fmt.Sprintf("%s: %d tool calls; accepted %d", where, len(sc), len(ac)))
		} else {
			for k := range ac {
				if !ids.same(ac[k][0], sc[k][0]) || ac[k][1] != sc[k][1] || !sameArguments(ac[k][2], sc[k][2]) {
					diffs = append(diffs, fmt.Sprintf("%s: tool call %v; accepted %v", where, sc[k], ac[k]))
				}
			}
		}
		if am["role"] == "assistant" {
			// The reasoning the accepted request carried back goes back,
			// in the same fields (DeepSeek's and Kimi's reasoning_content,
			// OpenRouter's reasoning and reasoning_details). A client
			// that wrote the same reasoning in two fields at once needs
			// it back in one of them, the one the answer used: ruby_llm
			// sends Ollama both reasoning and reasoning_content, and
			// Ollama reads only reasoning (its openai.Message has no
			// other field), the one its answers carry.
			for _, k := range []string{"reasoning_content", "reasoning", "reasoning_details"} {
				if rv, ok := am[k]; ok && rv != nil && rv != "" {
					if sv, ok := sm[k]; !ok || !reflect.DeepEqual(sv, rv) {
						if sentInTwin(am, sm, k, rv) {
							continue
						}
						diffs = append(diffs, fmt.Sprintf("%s: %s %v; accepted %v", where, k, sm[k], rv))
					}
				}
			}
			// Gemini's thought signatures go back with their calls.
			al, _ := am["tool_calls"].([]any)
			sl, _ := sm["tool_calls"].([]any)
			for k := range min(len(al), len(sl)) {
				ac, _ := al[k].(map[string]any)
				sc, _ := sl[k].(map[string]any)
				if ac["extra_content"] != nil && !reflect.DeepEqual(ac["extra_content"], sc["extra_content"]) {
					diffs = append(diffs, fmt.Sprintf("%s: tool call %d extra_content %v; accepted %v", where, k, sc["extra_content"], ac["extra_content"]))
				}
			}
		}
	}
	return diffs
}

// sentInTwin reports whether the reasoning rv that the accepted message
// am carried in field k it also carried, unchanged, in another reasoning
// field, and the sent message sm has it there.
func sentInTwin(am, sm map[string]any, k string, rv any) bool {
	for _, other := range []string{"reasoning_content", "reasoning"} {
		if other != k && reflect.DeepEqual(am[other], rv) && reflect.DeepEqual(sm[other], rv) {
			return true
		}
	}
	return false
}

func roles(ms []any) []any {
	var out []any
	for _, m := range ms {
		out = append(out, m.(map[string]any)["role"])
	}
	return out
}

// callsOf returns an assistant message's tool calls: id, name, arguments.
func callsOf(m map[string]any) [][3]any {
	list, _ := m["tool_calls"].([]any)
	var out [][3]any
	for _, c := range list {
		cm, _ := c.(map[string]any)
		f, _ := cm["function"].(map[string]any)
		out = append(out, [3]any{cm["id"], f["name"], f["arguments"]})
	}
	return out
}

// compareInput compares Responses input items: their kinds in order,
// message texts, function calls and outputs, and reasoning items.
func compareInput(av, sv any, ids idMap) []string {
	items := func(v any) []map[string]any {
		if s, ok := v.(string); ok {
			return []map[string]any{{"role": "user", "content": s}}
		}
		list, _ := v.([]any)
		var out []map[string]any
		for _, x := range list {
			m, _ := x.(map[string]any)
			if m["role"] == "assistant" && textOf(m["content"]) == "" {
				continue // an empty assistant message a client sent; it says nothing
			}
			out = append(out, m)
		}
		return out
	}
	kind := func(m map[string]any) string {
		t, _ := m["type"].(string)
		if t == "" || t == "message" {
			r, _ := m["role"].(string)
			if r == "developer" {
				r = "system"
			}
			return "message/" + r
		}
		return t
	}
	a, s := items(av), items(sv)
	var ak, sk []string
	for _, m := range a {
		ak = append(ak, kind(m))
	}
	for _, m := range s {
		sk = append(sk, kind(m))
	}
	if !slices.Equal(ak, sk) {
		return []string{fmt.Sprintf("input items %v; accepted %v", sk, ak)}
	}
	var diffs []string
	for i := range a {
		am, sm := a[i], s[i]
		switch kind(am) {
		case "function_call":
			if !ids.same(am["call_id"], sm["call_id"]) || am["name"] != sm["name"] || !sameArguments(am["arguments"], sm["arguments"]) {
				diffs = append(diffs, fmt.Sprintf("input %d function_call %v %v %v; accepted %v %v %v", i, sm["call_id"], sm["name"], sm["arguments"], am["call_id"], am["name"], am["arguments"]))
			}
		case "function_call_output":
			if !ids.same(am["call_id"], sm["call_id"]) || textOf(am["output"]) != textOf(sm["output"]) {
				diffs = append(diffs, fmt.Sprintf("input %d function_call_output %v %q; accepted %v %q", i, sm["call_id"], textOf(sm["output"]), am["call_id"], textOf(am["output"])))
			}
		case "reasoning":
			if am["id"] != sm["id"] || am["encrypted_content"] != sm["encrypted_content"] {
				diffs = append(diffs, fmt.Sprintf("input %d reasoning %v; accepted %v (with its encrypted content)", i, sm["id"], am["id"]))
			}
		default:
			if textOf(am["content"]) != textOf(sm["content"]) {
				diffs = append(diffs, fmt.Sprintf("input %d %s: %q; accepted %q", i, kind(am), textOf(sm["content"]), textOf(am["content"])))
			}
		}
	}
	return diffs
}

// compareNative compares a request to a native API (Anthropic's Messages
// API, the Gemini API) with the one the provider accepted, on what the
// provider checks: the system prompt, the tools and the tool choice, the
// token limit, the reasoning settings, and the messages (contents) in
// order — texts, tool calls and results (ids paired as for OpenAI),
// thinking blocks with their signatures and redacted data unchanged
// (Anthropic), thought signatures as the same bytes on the same parts
// (Gemini). Cache markers and the order of fields are not compared, and
// consecutive messages of one role count as one, as the APIs take them.
// What the provider refuses is checked by the recording's rules
// (realwire.Recording.Refuse).
func compareNative(rec *realwire.Recording, accepted, sent []byte) []string {
	var a, s map[string]json.RawMessage
	if err := json.Unmarshal(accepted, &a); err != nil {
		return []string{"the accepted request is not JSON: " + err.Error()}
	}
	if err := json.Unmarshal(sent, &s); err != nil {
		return []string{"the sent request is not JSON: " + err.Error()}
	}
	var diffs []string
	d := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	if err := rec.Refuse(sent); err != nil {
		d("the provider would refuse it: %v", err)
	}
	ids := idMap{}
	switch rec.API {
	case "anthropic":
		for _, k := range []string{"model", "stream"} {
			if !sameJSON(a[k], s[k]) && !(k == "stream" && string(a[k]) == "false" && s[k] == nil) {
				d("%s %s; accepted %s", k, s[k], a[k])
			}
		}
		if (a["thinking"] == nil) != (s["thinking"] == nil) {
			d("thinking %s; accepted %s", s["thinking"], a["thinking"])
		}
		if at, st := anthropicSystem(a["system"]), anthropicSystem(s["system"]); at != st {
			d("system %q; accepted %q", st, at)
		}
		if at, st := anthropicTools(a["tools"]), anthropicTools(s["tools"]); !reflect.DeepEqual(at, st) {
			d("tools %v; accepted %v", st, at)
		}
		am, sm := anthropicMessages(a["messages"]), anthropicMessages(s["messages"])
		if len(am) != len(sm) {
			return append(diffs, fmt.Sprintf("%d messages; accepted %d:\n%v\n%v", len(sm), len(am), sm, am))
		}
		for i := range am {
			if !sameNorm(am[i], sm[i], ids) {
				d("message %d: %v; accepted %v", i, sm[i], am[i])
			}
		}
	case "gemini":
		if at, st := geminiDecls(a["tools"]), geminiDecls(s["tools"]); !reflect.DeepEqual(at, st) {
			d("tools %v; accepted %v", st, at)
		}
		ac, sc := geminiContents(a["contents"]), geminiContents(s["contents"])
		if len(ac) != len(sc) {
			return append(diffs, fmt.Sprintf("%d contents; accepted %d:\n%v\n%v", len(sc), len(ac), sc, ac))
		}
		for i := range ac {
			if !sameNorm(ac[i], sc[i], ids) {
				d("contents %d: %v; accepted %v", i, sc[i], ac[i])
			}
		}
	}
	return diffs
}

func sameJSON(a, b json.RawMessage) bool {
	var av, bv any
	_ = json.Unmarshal(a, &av)
	_ = json.Unmarshal(b, &bv)
	return reflect.DeepEqual(av, bv)
}

// anthropicSystem is a request's system prompt as text.
func anthropicSystem(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var bs []struct{ Text string }
	_ = json.Unmarshal(v, &bs)
	for _, b := range bs {
		s += b.Text
	}
	return s
}

// anthropicTools is a request's tools: name and input schema.
func anthropicTools(v json.RawMessage) []any {
	var ts []struct {
		Name        string `json:"name"`
		InputSchema any    `json:"input_schema"`
	}
	_ = json.Unmarshal(v, &ts)
	var out []any
	for _, t := range ts {
		out = append(out, []any{t.Name, t.InputSchema})
	}
	return out
}

// anthropicMessages normalizes a request's messages: one per run of a
// role, each a list of its blocks as [kind, …]: text, thinking with its
// signature, redacted data, tool_use id/name/input, tool_result id/text.
// Call ids are callIDs.
func anthropicMessages(v json.RawMessage) []any {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(v, &msgs)
	var out []any
	var role string
	for _, m := range msgs {
		var blocks []map[string]any
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = []map[string]any{{"type": "text", "text": s}}
		} else {
			_ = json.Unmarshal(m.Content, &blocks)
		}
		var cur []any
		for _, b := range blocks {
			switch b["type"] {
			case "text":
				if t, _ := b["text"].(string); strings.TrimSpace(t) != "" {
					cur = append(cur, []any{"text", strings.TrimSpace(t)})
				}
			case "thinking":
				cur = append(cur, []any{"thinking", b["thinking"], b["signature"]})
			case "redacted_thinking":
				cur = append(cur, []any{"redacted_thinking", b["data"]})
			case "tool_use":
				cur = append(cur, []any{"tool_use", callID{b["id"]}, b["name"], b["input"]})
			case "tool_result":
				cur = append(cur, []any{"tool_result", callID{b["tool_use_id"]}, textOf(b["content"])})
			default:
				cur = append(cur, []any{b["type"]})
			}
		}
		if m.Role == role && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1].([]any), cur...)
			continue
		}
		role = m.Role
		out = append(out, append([]any{m.Role}, cur...))
	}
	return out
}

// callID marks a call id in a normalized message: ids are compared by
// pairing (idMap), not by value.
type callID struct{ v any }

// sameNorm compares normalized messages, call ids by pairing.
func sameNorm(a, s any, ids idMap) bool {
	switch av := a.(type) {
	case callID:
		sv, ok := s.(callID)
		return ok && ids.same(av.v, sv.v)
	case []any:
		sv, ok := s.([]any)
		if !ok || len(av) != len(sv) {
			return false
		}
		for i := range av {
			if !sameNorm(av[i], sv[i], ids) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, s)
}

// geminiDecls is a request's function declarations: name and schema.
func geminiDecls(v json.RawMessage) []any {
	var ts []struct {
		FunctionDeclarations []map[string]any `json:"functionDeclarations"`
	}
	_ = json.Unmarshal(v, &ts)
	var out []any
	for _, t := range ts {
		for _, d := range t.FunctionDeclarations {
			schema := d["parametersJsonSchema"]
			if schema == nil {
				schema = d["parameters_json_schema"]
			}
			if schema == nil {
				schema = d["parameters"]
			}
			out = append(out, []any{d["name"], schema})
		}
	}
	return out
}

// geminiContents normalizes a request's contents as anthropicMessages
// does: texts, thoughts, function calls (name, args) and responses
// (name, text), each signed part with its signature's bytes.
func geminiContents(v json.RawMessage) []any {
	var cs []struct {
		Role  string           `json:"role"`
		Parts []map[string]any `json:"parts"`
	}
	_ = json.Unmarshal(v, &cs)
	var out []any
	var role string
	for _, c := range cs {
		var cur []any
		for _, p := range c.Parts {
			sig, _ := p["thoughtSignature"].(string)
			if s := sigKey(sig); s != "" {
				sig = s
			}
			switch {
			case p["functionCall"] != nil:
				fc, _ := p["functionCall"].(map[string]any)
				cur = append(cur, []any{"call", fc["name"], fc["args"], sig})
				if fc["id"] != nil {
					cur = append(cur, callID{fc["id"]})
				}
			case p["functionResponse"] != nil:
				fr, _ := p["functionResponse"].(map[string]any)
				b, _ := json.Marshal(fr["response"])
				cur = append(cur, []any{"response", fr["name"], responseTextOf(b)})
			case p["thought"] == true:
				cur = append(cur, []any{"thought", p["text"], sig})
			case p["text"] != nil:
				if t, _ := p["text"].(string); t != "" || sig != "" {
					cur = append(cur, []any{"text", t, sig})
				}
			}
		}
		if c.Role == role && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1].([]any), cur...)
			continue
		}
		role = c.Role
		out = append(out, append([]any{c.Role}, cur...))
	}
	return out
}

// sigKey stands for a thought signature by its bytes (either base64
// alphabet), Google's skip signatures as "skip".
func sigKey(sig string) string {
	if sig == "" {
		return ""
	}
	for _, s := range realwire.GeminiSkipSignatures {
		if realwire.SameSignature(s, sig) {
			return "skip"
		}
	}
	b := strings.TrimRight(strings.NewReplacer("-", "+", "_", "/").Replace(sig), "=")
	return "sig:" + b
}

// responseTextOf is a function response's text: its one string, else its
// JSON.
func responseTextOf(b []byte) string {
	var m map[string]any
	if json.Unmarshal(b, &m) == nil && len(m) == 1 {
		for _, v := range m {
			if s, ok := v.(string); ok {
				return s
			}
		}
	}
	return string(b)
}

// callIDs returns the call ids of the function_call items of items (each
// an item, or an array of them), in order.
func callIDs(items ...json.RawMessage) []string {
	var out []string
	for _, raw := range items {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			list = []json.RawMessage{raw}
		}
		for _, it := range list {
			var c struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
			}
			if json.Unmarshal(it, &c) == nil && c.Type == "function_call" {
				out = append(out, c.CallID)
			}
		}
	}
	return out
}

// renameCall returns a function_call_output item with its call id
// renamed by ids; any other item as it is.
func renameCall(item json.RawMessage, ids map[string]string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(item, &m) != nil || m["type"] != "function_call_output" {
		return item
	}
	id, _ := m["call_id"].(string)
	to, ok := ids[id]
	if !ok || to == id {
		return item
	}
	m["call_id"] = to
	b, _ := json.Marshal(m)
	return b
}

// TestGoldenDiff: a golden file that differs in a line is reported by
// that line, not by the whole output.
func TestGoldenDiff(t *testing.T) {
	want := []byte("[\n  {\n    \"cost_source\": \"old\",\n    \"finish\": \"stop\"\n  }\n]\n")
	got := []byte("[\n  {\n    \"cost_source\": \"new\",\n    \"finish\": \"stop\"\n  }\n]\n")
	if d, w := goldenDiff(want, got), "line 3:\n-     \"cost_source\": \"old\",\n+     \"cost_source\": \"new\",\n"; d != w {
		t.Errorf("goldenDiff = %q, want %q", d, w)
	}
	if d := goldenDiff(want, []byte("[]\n")); !strings.Contains(d, "7 lines, the adapter's output 2") {
		t.Errorf("goldenDiff of outputs of different lengths = %q", d)
	}
}
