// Package otlp turns an agent world's sessions into OpenTelemetry spans, in
// the OTLP/JSON file format, following the OpenTelemetry semantic
// conventions for generative AI: a trace a turn, whose root span
// "invoke_agent WORLD" has a child "chat MODEL" for each model call and a
// child "execute_tool TOOL" for each tool call. It is what
// `demiurge trace --otlp FILE` writes, for tracing UIs to show.
//
// # Determinism
//
// The spans are a pure function of the turns, and so of the journal: their
// times are the ingress stamps of the journaled inputs (session.Turn's
// StartNS and EndNS, and those of its calls), never the clock, and their
// trace and span ids are BLAKE3 hashes of the world's name and what the
// journal says of the turn (its seq, chat and request id, a call's round
// and id), cut to 16 and 8 bytes. The same journal gives the same file,
// byte for byte.
//
// # Content
//
// As the conventions advise, the spans carry no content by default: no
// user or assistant text, tool arguments or tool output. Options.Content
// adds them (gen_ai.input.messages and gen_ai.output.messages on a turn's
// span, gen_ai.tool.call.arguments and gen_ai.tool.call.result on a tool
// call's, and a failed tool call's output as its status message).
//
// # Caveats
//
// gen_ai.provider.name names who served a model call, as its
// sys/LlmGenerateReceipt@3 says (from the server's host: "openrouter",
// "deepseek", "x_ai"…, in the conventions' words where they have one). An
// older receipt (@1, @2, which the agent's chat still takes) does not say:
// the call is then named by the maker of the model that answered, when
// its family is known (deepseek-*, grok-*), which is wrong behind a router
// or a proxy, else by its wire protocol, "openai" for both OpenAI
// protocols (the raw protocol is demiurge.llm.protocol). A turn
// that is still running ends, in its span, at the last stamp known of it.
package otlp

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/agent/session"
)

// ScopeName is the instrumentation scope of the spans: this package.
const ScopeName = "github.com/demiurge-dev/demiurge/agent/session/otlp"

// ServiceName is the service.name of the spans' resource.
const ServiceName = "demiurge"

// Options say what Build puts in the spans.
type Options struct {
	// World is the world's name: the agent's name (gen_ai.agent.name),
	// and part of every trace id.
	World string
	// Content adds the messages, tool arguments and tool results, which
	// the conventions make opt-in.
	Content bool
}

// Span kinds (OTLP's SpanKind).
const (
	KindInternal = 1
	KindClient   = 3
)

// Status codes (OTLP's Status.StatusCode).
const (
	StatusUnset = 0
	StatusOK    = 1
	StatusError = 2
)

// TracesData is OTLP's TracesData, the top-level object of an OTLP/JSON
// file (its encoding is that of an ExportTraceServiceRequest).
type TracesData struct {
	ResourceSpans []ResourceSpans `json:"resourceSpans"`
}

// ResourceSpans are the spans of one resource.
type ResourceSpans struct {
	Resource   Resource     `json:"resource"`
	ScopeSpans []ScopeSpans `json:"scopeSpans"`
}

// Resource is the entity the spans describe.
type Resource struct {
	Attributes []KeyValue `json:"attributes"`
}

// ScopeSpans are the spans of one instrumentation scope.
type ScopeSpans struct {
	Scope Scope  `json:"scope"`
	Spans []Span `json:"spans"`
}

// Scope is an instrumentation scope.
type Scope struct {
	Name string `json:"name"`
}

// Span is one span. TraceID, SpanID and ParentSpanID are lowercase hex, as
// OTLP/JSON writes ids; ParentSpanID is "" on a root span.
type Span struct {
	TraceID           string     `json:"traceId"`
	SpanID            string     `json:"spanId"`
	ParentSpanID      string     `json:"parentSpanId,omitempty"`
	Name              string     `json:"name"`
	Kind              int        `json:"kind"`
	StartTimeUnixNano uint64     `json:"startTimeUnixNano,string"`
	EndTimeUnixNano   uint64     `json:"endTimeUnixNano,string"`
	Attributes        []KeyValue `json:"attributes,omitempty"`
	Status            *Status    `json:"status,omitempty"`
}

// Status is a span's status: StatusError with a message for a span that
// failed.
type Status struct {
	Message string `json:"message,omitempty"`
	Code    int    `json:"code,omitempty"`
}

// KeyValue is an attribute.
type KeyValue struct {
	Key   string   `json:"key"`
	Value AnyValue `json:"value"`
}

// AnyValue is an attribute's value: a string, an integer, a float, a
// boolean or an array of them. Make one with String, Int, Double, Bool or
// Strings.
type AnyValue struct {
	kind byte // 's', 'i', 'd', 'b' or 'a'
	s    string
	i    int64
	d    float64
	b    bool
	a    []AnyValue
}

// String returns a string value.
func String(s string) AnyValue { return AnyValue{kind: 's', s: s} }

// Int returns an integer value.
func Int(i int64) AnyValue { return AnyValue{kind: 'i', i: i} }

// Double returns a floating-point value.
func Double(d float64) AnyValue { return AnyValue{kind: 'd', d: d} }

// Bool returns a boolean value.
func Bool(b bool) AnyValue { return AnyValue{kind: 'b', b: b} }

// Strings returns an array of strings.
func Strings(ss ...string) AnyValue {
	a := make([]AnyValue, len(ss))
	for i, s := range ss {
		a[i] = String(s)
	}
	return AnyValue{kind: 'a', a: a}
}

// MarshalJSON writes v as OTLP/JSON does: {"stringValue": …},
// {"intValue": "…"} (a 64-bit integer is a string), {"doubleValue": …},
// {"boolValue": …} or {"arrayValue": {"values": […]}}.
func (v AnyValue) MarshalJSON() ([]byte, error) {
	switch v.kind {
	case 's':
		return marshal(struct {
			V string `json:"stringValue"`
		}{v.s})
	case 'i':
		return []byte(`{"intValue":"` + strconv.FormatInt(v.i, 10) + `"}`), nil
	case 'd':
		return marshal(struct {
			V float64 `json:"doubleValue"`
		}{v.d})
	case 'b':
		return []byte(`{"boolValue":` + strconv.FormatBool(v.b) + `}`), nil
	case 'a':
		vs := v.a
		if vs == nil {
			vs = []AnyValue{}
		}
		return marshal(struct {
			A struct {
				V []AnyValue `json:"values"`
			} `json:"arrayValue"`
		}{struct {
			V []AnyValue `json:"values"`
		}{vs}})
	}
	return []byte(`{}`), nil // the empty value
}

// marshal is json.Marshal without HTML escaping: the text stays readable.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Build returns the spans of turns: a trace a turn, in the order of turns,
// with the root span of each first, then its calls round by round (a
// compaction call before the round's model call, then its tool calls).
func Build(turns []*session.Turn, o Options) *TracesData {
	spans := []Span{}
	for _, t := range turns {
		spans = append(spans, turnSpans(t, o)...)
	}
	return &TracesData{ResourceSpans: []ResourceSpans{{
		Resource:   Resource{Attributes: resource(o.World)},
		ScopeSpans: []ScopeSpans{{Scope: Scope{Name: ScopeName}, Spans: spans}},
	}}}
}

// resource returns the attributes of the spans' resource.
func resource(world string) []KeyValue {
	a := []KeyValue{{"service.name", String(ServiceName)}}
	if world != "" {
		a = append(a, KeyValue{"demiurge.world", String(world)})
	}
	return a
}

// Write writes the spans of turns to w as one line of OTLP/JSON: a file
// of the OTLP file exporter's format (JSON Lines), and a JSON document.
func Write(w io.Writer, turns []*session.Turn, o Options) error {
	b, err := Build(turns, o).Encode()
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("otlp: write: %w", err)
	}
	return nil
}

// Encode returns d in OTLP/JSON, on one line ended by a newline.
func (d *TracesData) Encode() ([]byte, error) {
	b, err := marshal(d)
	if err != nil {
		return nil, fmt.Errorf("otlp: encode: %w", err)
	}
	return append(b, '\n'), nil
}

// Spans counts the spans of d.
func (d *TracesData) Spans() int {
	n := 0
	for _, rs := range d.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n
}

// TraceID returns the trace id of a turn of world: 16 bytes of the BLAKE3
// hash of the world's name, the turn's seq and the hash of its record
// (which chains over the whole journal before it, stamps included: two
// sessions do not share trace ids), its chat and request id.
func TraceID(world string, t *session.Turn) [16]byte {
	h := blake3.New()
	writeField(h, []byte("demiurge/otlp trace"))
	writeField(h, []byte(world))
	writeField(h, binary.BigEndian.AppendUint64(nil, t.Seq))
	writeField(h, []byte(t.Hash))
	writeField(h, []byte(t.Chat))
	writeField(h, binary.BigEndian.AppendUint64(nil, t.RequestID))
	var id [16]byte
	copy(id[:], h.Sum(nil))
	if id == ([16]byte{}) {
		id[15] = 1 // all zeros is no id
	}
	return id
}

// spanID returns the id of a span of a trace: 8 bytes of the BLAKE3 hash
// of the trace id and the span's path in it.
func spanID(trace [16]byte, path ...string) string {
	h := blake3.New()
	writeField(h, []byte("demiurge/otlp span"))
	writeField(h, trace[:])
	for _, p := range path {
		writeField(h, []byte(p))
	}
	var id [8]byte
	copy(id[:], h.Sum(nil))
	if id == ([8]byte{}) {
		id[7] = 1
	}
	return hex.EncodeToString(id[:])
}

// writeField writes b to h after its length, so that fields cannot run
// into each other.
func writeField(h *blake3.Hasher, b []byte) {
	_, _ = h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
	_, _ = h.Write(b)
}

// turnSpans returns a turn's root span and its children.
func turnSpans(t *session.Turn, o Options) []Span {
	trace := TraceID(o.World, t)
	traceHex := hex.EncodeToString(trace[:])
	root := Span{TraceID: traceHex, SpanID: spanID(trace, "turn"), Name: "invoke_agent", Kind: KindInternal,
		StartTimeUnixNano: t.StartNS, EndTimeUnixNano: t.EndNS}
	if o.World != "" {
		root.Name += " " + o.World
	}
	var children []Span
	var first *session.ModelCall // the turn's first model call
	var in, out uint64           // tokens of the turn's calls
	usageKnown := false
	errType := ""
	for round, r := range t.Rounds {
		for _, m := range []*session.ModelCall{r.Compaction, r.Model} {
			if m == nil {
				continue
			}
			if first == nil {
				first = m
			}
			if !m.UsageUnknown && m.Error == "" {
				in, out, usageKnown = in+m.InputTokens, out+m.OutputTokens, true
			}
			s := modelSpan(m, t, o, trace, round, m == r.Compaction)
			if s.Status != nil && s.Status.Code == StatusError {
				errType = attr(s, "error.type")
			}
			children = append(children, s)
		}
		for i, c := range r.Calls {
			children = append(children, toolSpan(c, t, o, trace, round, i, r.Model))
		}
	}
	for i := range children {
		children[i].TraceID, children[i].ParentSpanID = traceHex, root.SpanID
		if children[i].StartTimeUnixNano == 0 { // no stamp read (a journal cut short): the turn's
			children[i].StartTimeUnixNano = t.StartNS
		}
		children[i].EndTimeUnixNano = max(children[i].EndTimeUnixNano, children[i].StartTimeUnixNano)
		// A parent lies around its children: a running turn ends at the
		// last stamp known of it.
		root.StartTimeUnixNano = min(root.StartTimeUnixNano, children[i].StartTimeUnixNano)
		root.EndTimeUnixNano = max(root.EndTimeUnixNano, children[i].EndTimeUnixNano)
	}
	root.EndTimeUnixNano = max(root.EndTimeUnixNano, root.StartTimeUnixNano)

	a := []KeyValue{{"gen_ai.operation.name", String("invoke_agent")}}
	if first != nil {
		a = append(a, KeyValue{"gen_ai.provider.name", String(providerName(first))})
	}
	if o.World != "" {
		a = append(a, KeyValue{"gen_ai.agent.name", String(o.World)})
	}
	a = append(a, KeyValue{"gen_ai.conversation.id", String(t.Chat)})
	if first != nil && first.RequestModel != "" {
		a = append(a, KeyValue{"gen_ai.request.model", String(first.RequestModel)})
	}
	if f := t.LastFinish(); f != "" {
		a = append(a, KeyValue{"gen_ai.response.finish_reasons", Strings(f)})
	}
	if usageKnown {
		a = append(a, KeyValue{"gen_ai.usage.input_tokens", Int(int64(in))}, KeyValue{"gen_ai.usage.output_tokens", Int(int64(out))})
	}
	if o.World != "" {
		a = append(a, KeyValue{"demiurge.world", String(o.World)})
	}
	a = append(a, KeyValue{"demiurge.seq", Int(int64(t.Seq))},
		KeyValue{"demiurge.request_id", Int(int64(t.RequestID))},
		KeyValue{"demiurge.rounds", Int(int64(len(t.Rounds)))})
	if t.Outcome != "" {
		a = append(a, KeyValue{"demiurge.outcome", String(t.Outcome)})
	} else {
		a = append(a, KeyValue{"demiurge.running", Bool(true)})
	}
	cost, unknown := t.Cost()
	a = appendCost(a, cost, unknown)
	switch t.Outcome {
	case "failed":
		if errType == "" {
			errType = "_OTHER"
		}
		a = append(a, KeyValue{"error.type", String(errType)})
		root.Status = &Status{Code: StatusError, Message: t.Error}
	case "stopped":
		a = append(a, KeyValue{"error.type", String("stopped")})
		root.Status = &Status{Code: StatusError, Message: t.Stop}
	}
	if o.Content {
		if t.User != "" {
			a = append(a, KeyValue{"gen_ai.input.messages", String(messages("user", "", t.User))})
		}
		if len(t.Assistant) > 0 {
			a = append(a, KeyValue{"gen_ai.output.messages", String(messages("assistant", t.LastFinish(), t.Assistant...))})
		}
	}
	root.Attributes = a
	return append([]Span{root}, children...)
}

// modelSpan returns the span of a model call.
func modelSpan(m *session.ModelCall, t *session.Turn, o Options, trace [16]byte, round int, compact bool) Span {
	model := m.RequestModel
	if model == "" {
		model = m.Model
	}
	purpose := "answer"
	if compact {
		purpose = "compact"
	}
	s := Span{SpanID: spanID(trace, "model", strconv.Itoa(round), purpose), Name: "chat", Kind: KindClient,
		StartTimeUnixNano: m.StartNS, EndTimeUnixNano: max(m.EndNS, m.StartNS)}
	if model != "" {
		s.Name += " " + model
	}
	a := []KeyValue{
		{"gen_ai.operation.name", String("chat")},
		{"gen_ai.provider.name", String(providerName(m))},
		{"gen_ai.conversation.id", String(t.Chat)},
	}
	if m.RequestModel != "" {
		a = append(a, KeyValue{"gen_ai.request.model", String(m.RequestModel)})
	}
	if m.Model != "" {
		a = append(a, KeyValue{"gen_ai.response.model", String(m.Model)})
	}
	if m.ResponseID != "" {
		a = append(a, KeyValue{"gen_ai.response.id", String(m.ResponseID)})
	}
	if m.Finish != "" {
		a = append(a, KeyValue{"gen_ai.response.finish_reasons", Strings(m.Finish)})
	}
	if m.Error == "" && !m.UsageUnknown {
		a = append(a, KeyValue{"gen_ai.usage.input_tokens", Int(int64(m.InputTokens))},
			KeyValue{"gen_ai.usage.output_tokens", Int(int64(m.OutputTokens))},
			KeyValue{"gen_ai.usage.cache_read.input_tokens", Int(int64(m.CachedTokens))},
			KeyValue{"demiurge.usage.reasoning_tokens", Int(int64(m.Reasoning))})
		if m.CacheWriteTokens > 0 {
			a = append(a, KeyValue{"gen_ai.usage.cache_creation.input_tokens", Int(int64(m.CacheWriteTokens))})
		}
	}
	if m.Provider != "" {
		a = append(a, KeyValue{"demiurge.llm.protocol", String(m.Provider)})
	}
	a = append(a, KeyValue{"demiurge.seq", Int(int64(m.Seq))},
		KeyValue{"demiurge.round", Int(int64(round))},
		KeyValue{"demiurge.purpose", String(purpose)})
	if len(m.Retried) > 0 {
		a = append(a, KeyValue{"demiurge.llm.failed_attempts", Int(int64(len(m.Retried)))})
	}
	if m.Error == "" {
		a = appendCost(a, m.CostMicroUSD, m.CostUnknown)
		if m.CostSource != "" && !m.CostUnknown {
			a = append(a, KeyValue{"demiurge.cost_source", String(m.CostSource)})
		}
	} else {
		a = append(a, KeyValue{"error.type", String(modelErrorType(m))})
		s.Status = &Status{Code: StatusError, Message: m.Error}
	}
	s.Attributes = a
	return s
}

// toolSpan returns the span of a tool call, the i-th of its round. A call
// without stamps (never read) lies at the end of the model call that made
// it.
func toolSpan(c *session.ToolCall, t *session.Turn, o Options, trace [16]byte, round, i int, m *session.ModelCall) Span {
	start, end := c.StartNS, c.EndNS
	if start == 0 && m != nil {
		start = m.EndNS
	}
	if end < start {
		end = start // running: no end yet
	}
	s := Span{SpanID: spanID(trace, "tool", strconv.Itoa(round), strconv.Itoa(i), c.CallID), Name: "execute_tool " + c.Tool,
		Kind: KindInternal, StartTimeUnixNano: start, EndTimeUnixNano: end}
	a := []KeyValue{
		{"gen_ai.operation.name", String("execute_tool")},
		{"gen_ai.tool.name", String(c.Tool)},
		{"gen_ai.tool.call.id", String(c.CallID)},
		{"gen_ai.tool.type", String("function")},
		{"gen_ai.conversation.id", String(t.Chat)},
		{"demiurge.tool.status", String(c.Status)},
	}
	if c.Seq != 0 {
		a = append(a, KeyValue{"demiurge.seq", Int(int64(c.Seq))})
	}
	a = append(a, KeyValue{"demiurge.round", Int(int64(round))})
	if len(c.SubCalls) > 0 {
		a = append(a, KeyValue{"demiurge.tool.commands", Strings(c.SubCalls...)})
	}
	if c.Approval != "" {
		a = append(a, KeyValue{"demiurge.tool.approval", String(c.Approval)})
	}
	if len(c.Commits) > 0 {
		a = append(a, KeyValue{"demiurge.workspace.commits", Int(int64(len(c.Commits)))})
	}
	errType := c.Status // error, denied, timeout, not_run
	switch {
	case c.Rejected:
		errType = "rejected" // refused before running: an unknown tool, bad arguments
	case c.Cut:
		errType = "cut" // not run: the model's reply was cut off
	case c.Status == "ok", c.Status == "requested", c.Status == "approval", c.Status == "":
		errType = ""
	}
	if errType != "" {
		a = append(a, KeyValue{"error.type", String(errType)})
		msg := "the tool call's status is " + c.Status
		switch errType {
		case "rejected":
			msg = "the tool call was rejected before running"
		case "cut":
			msg = "the tool call was not run: the model's reply was cut off"
		}
		if o.Content {
			msg = c.Output
		}
		s.Status = &Status{Code: StatusError, Message: msg}
	}
	if o.Content {
		a = append(a, KeyValue{"gen_ai.tool.call.arguments", String(c.Arguments)})
		if c.Status == "ok" {
			a = append(a, KeyValue{"gen_ai.tool.call.result", String(c.Output)})
		}
	}
	s.Attributes = a
	return s
}

// providerName is gen_ai.provider.name for a model call: who served it,
// as its receipt says, in the conventions' words where they have one;
// else, for a receipt that does not say (@1, @2), the maker of the model
// that answered, if its family is known (deepseek-* is DeepSeek's);
// else by its wire protocol: both OpenAI protocols (and the adapter's
// default, "") speak to OpenAI or to a server compatible with it;
// Anthropic's and Gemini's own protocols to "anthropic" and "gcp.gemini".
func providerName(m *session.ModelCall) string {
	name := m.ProviderName
	if name == "" {
		name = llm.ModelProvider(cmp.Or(m.Model, m.RequestModel))
	}
	if name != "" {
		if n, ok := semconvProviders[name]; ok {
			return n
		}
		return name
	}
	switch m.Provider {
	case "", llm.ProviderResponses, llm.ProviderChat:
		return "openai"
	case llm.ProviderGemini:
		return semconvProviders["gemini"] // the Gemini API's own protocol
	}
	return m.Provider // llm.ProviderAnthropic is the conventions' "anthropic"
}

// semconvProviders are the conventions' names of the providers whose
// names differ from demiurge's (gen_ai.provider.name's well-known values).
var semconvProviders = map[string]string{
	"azure":    "azure.ai.openai",
	"gemini":   "gcp.gemini",
	"vertexai": "gcp.vertex_ai",
	"mistral":  "mistral_ai",
	"xai":      "x_ai",
	"bedrock":  "aws.bedrock",
}

// httpStatus finds the HTTP status a provider error names.
var httpStatus = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(HTTP ([0-9]{3})\b`) })

// modelErrorType is error.type for a failed model call: the kind of
// llm.ProviderError it was (rate_limited, auth, timeout, …), else the HTTP
// status it names, else "timeout" for a timed-out receipt, else _OTHER.
func modelErrorType(m *session.ModelCall) string {
	if k, ok := llm.KindOf(m.Error); ok && k != llm.KindHTTP {
		return string(k)
	}
	if s := httpStatus().FindStringSubmatch(m.Error); s != nil {
		return s[1]
	}
	if m.Status == "timeout" {
		return "timeout"
	}
	return "_OTHER"
}

// appendCost adds the cost in USD, if it is known in full, or says it is
// not.
func appendCost(a []KeyValue, microUSD uint64, unknown bool) []KeyValue {
	if unknown {
		return append(a, KeyValue{"demiurge.cost_unknown", Bool(true)})
	}
	return append(a, KeyValue{"demiurge.cost_usd", Double(float64(microUSD) / 1e6)})
}

// attr returns the string value of a span's attribute, "" if it has none.
func attr(s Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key && kv.Value.kind == 's' {
			return kv.Value.s
		}
	}
	return ""
}

// message is a chat message of the conventions' input and output messages
// (gen-ai-input-messages.json, gen-ai-output-messages.json).
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type part struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// messages returns one message of texts as a JSON array, the form the
// conventions give gen_ai.input.messages and gen_ai.output.messages on a
// span.
func messages(role, finish string, texts ...string) string {
	m := message{Role: role, FinishReason: finish}
	for _, t := range texts {
		m.Parts = append(m.Parts, part{"text", t})
	}
	b, err := marshal([]message{m})
	if err != nil {
		return "" // strings and slices always encode
	}
	return string(b)
}
