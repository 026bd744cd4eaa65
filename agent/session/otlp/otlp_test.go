package otlp_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/agent/session/otlp"
	"github.com/demiurge-dev/demiurge/replay"
)

var update = flag.Bool("update", false, "rewrite testdata/*.otlp.jsonl from the recorded sessions (review the diff)")

const ms = uint64(1e6)

// t0 is a stamp: 2026-11-25 13:35:04 UTC.
const t0 = uint64(1795613704000000000)

// tc is a tool call that ran from start to end (ms after t0).
func tc(id, tool, status string, start, end uint64) *session.ToolCall {
	return &session.ToolCall{CallID: id, Tool: tool, Status: status, Arguments: `{"path":"secret.txt"}`, Output: "the file says: hunter2",
		StartNS: t0 + start*ms, EndNS: t0 + end*ms, Seq: 10}
}

// mc is a model call from start to end (ms after t0).
func mc(finish string, start, end uint64) *session.ModelCall {
	return &session.ModelCall{Provider: "openai-responses", RequestModel: "gpt-5", Model: "gpt-5-2026", ResponseID: "resp_1",
		InputTokens: 100, CachedTokens: 40, OutputTokens: 20, CostMicroUSD: 1500, Finish: finish, Status: "ok",
		StartNS: t0 + start*ms, EndNS: t0 + end*ms, Seq: 9}
}

// turn is a turn of chat main from start to end (ms after t0; end 0:
// running).
func turn(outcome string, end uint64, rounds ...*session.Round) *session.Turn {
	t := &session.Turn{Chat: "main", RequestID: 1, Seq: 4, User: "read my secret", Rounds: rounds, Outcome: outcome, StartNS: t0}
	if end != 0 {
		t.EndNS = t0 + end*ms
	}
	switch outcome {
	case "failed":
		t.Error = "the model call failed"
	case "stopped":
		t.Stop = "the turn made 3 rounds, its limit"
	case "answer":
		t.Assistant = []string{"It says hunter2."}
	}
	return t
}

// want is what a test expects of one span: its name, kind, status code
// and some attributes (a value "-" means the attribute is absent).
type want struct {
	name   string
	kind   int
	status int
	attrs  map[string]string
}

func TestSpans(t *testing.T) {
	failed := mc("", 0, 30)
	failed.Error, failed.Status = "llm: openai-responses: rate limited (HTTP 429): slow down [request req_1] (after 3 attempts)", "error"
	otherErr := mc("", 0, 30)
	otherErr.Error, otherErr.Status = "proxy said (HTTP 502) bad gateway", "error"
	timedOut := mc("", 0, 30)
	timedOut.Error, timedOut.Status = "the call took too long", "timeout"
	noUsage := mc("stop", 0, 5)
	noUsage.UsageUnknown, noUsage.CostUnknown, noUsage.InputTokens, noUsage.OutputTokens = true, true, 0, 0
	compaction := mc("stop", 0, 3)
	rejected, cut := tc("c4", "nope", "error", 10, 10), tc("c5", "bash", "not_run", 10, 10)
	rejected.Rejected, cut.Cut = true, true
	running := tc("call_3", "bash", "requested", 10, 0)
	running.EndNS = 0

	tests := []struct {
		name    string
		turn    *session.Turn
		content bool
		want    []want
	}{
		{"answer", turn("answer", 20, &session.Round{Model: mc("tool_calls", 0, 10), Calls: []*session.ToolCall{tc("call_1", "workspace_read", "ok", 10, 12)}},
			&session.Round{Model: mc("stop", 12, 20)}), false, []want{
			{"invoke_agent main", otlp.KindInternal, otlp.StatusUnset, map[string]string{
				"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "main", "gen_ai.conversation.id": "main",
				"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-5", "gen_ai.usage.input_tokens": "200",
				"gen_ai.usage.output_tokens": "40", "gen_ai.response.finish_reasons": "[stop]", "demiurge.cost_usd": "0.003",
				"demiurge.seq": "4", "demiurge.outcome": "answer", "error.type": "-", "gen_ai.input.messages": "-", "gen_ai.output.messages": "-"}},
			{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, map[string]string{
				"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-5",
				"gen_ai.response.model": "gpt-5-2026", "gen_ai.response.id": "resp_1", "gen_ai.usage.input_tokens": "100",
				"gen_ai.usage.output_tokens": "20", "gen_ai.usage.cache_read.input_tokens": "40", "gen_ai.response.finish_reasons": "[tool_calls]",
				"demiurge.llm.protocol": "openai-responses", "demiurge.seq": "9", "demiurge.round": "0", "demiurge.cost_usd": "0.0015"}},
			{"execute_tool workspace_read", otlp.KindInternal, otlp.StatusUnset, map[string]string{
				"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "workspace_read", "gen_ai.tool.call.id": "call_1",
				"gen_ai.tool.type": "function", "demiurge.tool.status": "ok", "demiurge.seq": "10",
				"gen_ai.tool.call.arguments": "-", "gen_ai.tool.call.result": "-"}},
			{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, map[string]string{"demiurge.round": "1", "gen_ai.response.finish_reasons": "[stop]"}},
		}},
		{"content", turn("answer", 20, &session.Round{Model: mc("tool_calls", 0, 10), Calls: []*session.ToolCall{tc("call_1", "workspace_read", "ok", 10, 12)}}),
			true, []want{
				{"invoke_agent main", otlp.KindInternal, otlp.StatusUnset, map[string]string{
					"gen_ai.input.messages":  `[{"role":"user","parts":[{"type":"text","content":"read my secret"}]}]`,
					"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"text","content":"It says hunter2."}],"finish_reason":"tool_calls"}]`}},
				{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, nil},
				{"execute_tool workspace_read", otlp.KindInternal, otlp.StatusUnset, map[string]string{
					"gen_ai.tool.call.arguments": `{"path":"secret.txt"}`, "gen_ai.tool.call.result": "the file says: hunter2"}},
			}},
		{"rate limited", turn("failed", 30, &session.Round{Model: failed}), false, []want{
			{"invoke_agent main", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "rate_limited", "demiurge.outcome": "failed",
				"gen_ai.usage.input_tokens": "-"}},
			{"chat gpt-5", otlp.KindClient, otlp.StatusError, map[string]string{"error.type": "rate_limited", "gen_ai.usage.input_tokens": "-", "demiurge.cost_usd": "-"}},
		}},
		{"http status", turn("failed", 30, &session.Round{Model: otherErr}), false, []want{
			{"invoke_agent main", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "502"}},
			{"chat gpt-5", otlp.KindClient, otlp.StatusError, map[string]string{"error.type": "502"}},
		}},
		{"timeout", turn("failed", 30, &session.Round{Model: timedOut}), false, []want{
			{"invoke_agent main", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "timeout"}},
			{"chat gpt-5", otlp.KindClient, otlp.StatusError, map[string]string{"error.type": "timeout"}},
		}},
		{"usage unknown", turn("answer", 5, &session.Round{Model: noUsage}), false, []want{
			{"invoke_agent main", otlp.KindInternal, otlp.StatusUnset, map[string]string{"gen_ai.usage.input_tokens": "-", "demiurge.cost_unknown": "true", "demiurge.cost_usd": "-"}},
			{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, map[string]string{"gen_ai.usage.input_tokens": "-", "demiurge.cost_unknown": "true"}},
		}},
		{"compaction", turn("answer", 10, &session.Round{Compaction: compaction, Model: mc("stop", 3, 10)}), false, []want{
			{"invoke_agent main", otlp.KindInternal, otlp.StatusUnset, nil},
			{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, map[string]string{"demiurge.purpose": "compact"}},
			{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, map[string]string{"demiurge.purpose": "answer"}},
		}},
		{"tool failures", turn("answer", 20, &session.Round{Model: mc("tool_calls", 0, 10), Calls: []*session.ToolCall{
			tc("c1", "bash", "error", 10, 15), tc("c2", "workspace_write", "denied", 10, 11), tc("c3", "workspace_read", "timeout", 10, 20),
			rejected, cut}}), false, []want{
			{"invoke_agent main", otlp.KindInternal, otlp.StatusUnset, nil},
			{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, nil},
			{"execute_tool bash", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "error"}},
			{"execute_tool workspace_write", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "denied"}},
			{"execute_tool workspace_read", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "timeout"}},
			{"execute_tool nope", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "rejected"}},
			{"execute_tool bash", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "cut"}},
		}},
		{"guard stop", turn("stopped", 12, &session.Round{Model: mc("tool_calls", 0, 10), Calls: []*session.ToolCall{tc("c1", "bash", "not_run", 10, 12)}}), false, []want{
			{"invoke_agent main", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "stopped", "demiurge.outcome": "stopped"}},
			{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, nil},
			{"execute_tool bash", otlp.KindInternal, otlp.StatusError, map[string]string{"error.type": "not_run"}},
		}},
		{"running", turn("", 0, &session.Round{Model: mc("tool_calls", 0, 10), Calls: []*session.ToolCall{running}}), false, []want{
			{"invoke_agent main", otlp.KindInternal, otlp.StatusUnset, map[string]string{"demiurge.running": "true", "demiurge.outcome": "-"}},
			{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, nil},
			{"execute_tool bash", otlp.KindInternal, otlp.StatusUnset, map[string]string{"demiurge.tool.status": "requested", "demiurge.seq": "10"}},
		}},
	}
	unstamped := mc("stop", 0, 0)
	unstamped.StartNS, unstamped.EndNS = 0, 0
	unstampedCall := tc("c1", "bash", "ok", 0, 0)
	unstampedCall.StartNS, unstampedCall.EndNS = 0, 0
	tests = append(tests, struct {
		name    string
		turn    *session.Turn
		content bool
		want    []want
	}{"no stamps", turn("answer", 5, &session.Round{Model: unstamped, Calls: []*session.ToolCall{unstampedCall}}), false, []want{
		{"invoke_agent main", otlp.KindInternal, otlp.StatusUnset, nil},
		{"chat gpt-5", otlp.KindClient, otlp.StatusUnset, nil},
		{"execute_tool bash", otlp.KindInternal, otlp.StatusUnset, nil},
	}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := otlp.Build([]*session.Turn{tt.turn}, otlp.Options{World: "main", Content: tt.content})
			spans := d.ResourceSpans[0].ScopeSpans[0].Spans
			if len(spans) != len(tt.want) {
				t.Fatalf("%d spans; want %d", len(spans), len(tt.want))
			}
			for i, w := range tt.want {
				s := spans[i]
				if s.Name != w.name || s.Kind != w.kind {
					t.Errorf("span %d: %q kind %d; want %q kind %d", i, s.Name, s.Kind, w.name, w.kind)
				}
				code := otlp.StatusUnset
				if s.Status != nil {
					code = s.Status.Code
					if code == otlp.StatusError && s.Status.Message == "" {
						t.Errorf("span %d (%s): an error status without a message", i, s.Name)
					}
				}
				if code != w.status {
					t.Errorf("span %d (%s): status %d; want %d", i, s.Name, code, w.status)
				}
				got := attrs(t, s)
				for k, v := range w.attrs {
					g, ok := got[k]
					if !ok {
						g = "-"
					}
					if g != v {
						t.Errorf("span %d (%s): %s = %s; want %s", i, s.Name, k, g, v)
					}
				}
			}
			b, err := d.Encode()
			if err != nil {
				t.Fatal(err)
			}
			checkOTLP(t, b)
			if !tt.content && bytes.Contains(b, []byte("hunter2")) {
				t.Errorf("content in the spans without Options.Content: %s", b)
			}
		})
	}
}

// attrs returns a span's attributes as text: a string as it is, an
// integer, float or boolean in JSON, an array as [a b].
func attrs(t *testing.T, s otlp.Span) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range s.Attributes {
		b, err := json.Marshal(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			S *string  `json:"stringValue"`
			I *string  `json:"intValue"`
			D *float64 `json:"doubleValue"`
			B *bool    `json:"boolValue"`
			A *struct {
				Values []struct {
					S string `json:"stringValue"`
				} `json:"values"`
			} `json:"arrayValue"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		switch {
		case v.S != nil:
			m[kv.Key] = *v.S
		case v.I != nil:
			m[kv.Key] = *v.I
		case v.D != nil:
			m[kv.Key] = fmt.Sprint(*v.D)
		case v.B != nil:
			m[kv.Key] = fmt.Sprint(*v.B)
		case v.A != nil:
			var ss []string
			for _, e := range v.A.Values {
				ss = append(ss, e.S)
			}
			m[kv.Key] = "[" + strings.Join(ss, " ") + "]"
		}
		if _, dup := m[kv.Key+"\x00seen"]; dup {
			t.Errorf("span %s: attribute %s twice", s.Name, kv.Key)
		}
		m[kv.Key+"\x00seen"] = ""
	}
	for k := range m {
		if strings.HasSuffix(k, "\x00seen") {
			delete(m, k)
		}
	}
	return m
}

// TestAnyValue: attribute values are written as OTLP/JSON writes them.
func TestAnyValue(t *testing.T) {
	for _, tt := range []struct {
		v    otlp.AnyValue
		want string
	}{
		{otlp.String("a <b> & \"c\""), `{"stringValue":"a <b> & \"c\""}`},
		{otlp.Int(-42), `{"intValue":"-42"}`},
		{otlp.Int(1 << 62), `{"intValue":"4611686018427387904"}`},
		{otlp.Double(0.0015), `{"doubleValue":0.0015}`},
		{otlp.Bool(true), `{"boolValue":true}`},
		{otlp.Strings(), `{"arrayValue":{"values":[]}}`},
		{otlp.Strings("stop", "length"), `{"arrayValue":{"values":[{"stringValue":"stop"},{"stringValue":"length"}]}}`},
		{otlp.AnyValue{}, `{}`},
	} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b) // as Encode does: no HTML escapes
		enc.SetEscapeHTML(false)
		err := enc.Encode(tt.v)
		if got := strings.TrimSuffix(b.String(), "\n"); err != nil || got != tt.want {
			t.Errorf("got %s, %v; want %s", got, err, tt.want)
		}
	}
}

// sessionTurns reads a recorded session's turns, and the name of its
// world.
func sessionTurns(t *testing.T, dir string) ([]*session.Turn, string) {
	t.Helper()
	b, err := replay.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Storage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := session.NewReader(st.CAS())
	if err := st.Journal().Read(t.Context(), b.Manifest.World, 1, r.Record); err != nil {
		t.Fatal(err)
	}
	return r.Turns(), b.Manifest.World
}

// spanLines puts each span of an OTLP/JSON line on a line of its own, for
// golden files people can read and diff; removing the newlines before
// `{"traceId"` gives the line back, byte for byte (a JSON string cannot
// hold that text unescaped).
func spanLines(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte(`{"traceId"`), []byte("\n"+`{"traceId"`))
}

// TestGolden writes the spans of every recorded session under
// testdata/sessions, with and without content, and checks them against
// testdata/NAME.otlp.jsonl (NAME.content.otlp.jsonl), byte for byte:
// the same journal gives the same file. -update rewrites them.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("../../../testdata/sessions/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded sessions: %v", err)
	}
	for _, dir := range dirs {
		for _, content := range []bool{false, true} {
			name := filepath.Base(dir)
			file := name + ".otlp.jsonl"
			if content {
				file = name + ".content.otlp.jsonl"
			}
			t.Run(file, func(t *testing.T) {
				turns, world := sessionTurns(t, dir)
				var got bytes.Buffer
				if err := otlp.Write(&got, turns, otlp.Options{World: world, Content: content}); err != nil {
					t.Fatal(err)
				}
				checkOTLP(t, got.Bytes())
				again, _ := sessionTurns(t, dir)
				if b, _ := otlp.Build(again, otlp.Options{World: world, Content: content}).Encode(); !bytes.Equal(b, got.Bytes()) {
					t.Fatal("a second read of the same journal gives other bytes")
				}
				golden := filepath.Join("testdata", file)
				if *update {
					if err := os.MkdirAll("testdata", 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, spanLines(got.Bytes()), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to write it)", err)
				}
				if !bytes.Equal(spanLines(got.Bytes()), want) {
					t.Errorf("the spans of %s differ from %s (run with -update and review the diff):\n%s", name, golden, firstDiff(spanLines(got.Bytes()), want))
				}
			})
		}
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\ngot  %s\nwant %s", i+1, gl, wl)
		}
	}
	return ""
}

// TestIDs: the ids of a turn's trace depend on the world, and on the turn.
func TestIDs(t *testing.T) {
	a := &session.Turn{Chat: "main", RequestID: 1, Seq: 4}
	b := &session.Turn{Chat: "main", RequestID: 2, Seq: 40}
	if otlp.TraceID("w", a) == otlp.TraceID("w2", a) || otlp.TraceID("w", a) == otlp.TraceID("w", b) {
		t.Error("two turns have the same trace id")
	}
	if otlp.TraceID("w", a) == otlp.TraceID("w", &session.Turn{Chat: "main", RequestID: 1, Seq: 4, Hash: "blake3:00"}) {
		t.Error("turns of two journals have the same trace id")
	}
	if otlp.TraceID("w", a) != otlp.TraceID("w", &session.Turn{Chat: "main", RequestID: 1, Seq: 4}) {
		t.Error("a turn's trace id changes")
	}
}

var hexID = regexp.MustCompile(`^[0-9a-f]+$`)

// checkOTLP checks that b is one line of OTLP/JSON, by decoding it into
// OTLP's own TracesData (the proto of go.opentelemetry.io/proto/otlp, which
// rejects unknown fields and values of the wrong type), and that the
// spans are sound: ids of the right length in lowercase hex, a root and
// its children in each trace, each child within its parent's time, kinds
// as the GenAI conventions say.
func checkOTLP(t *testing.T, b []byte) {
	t.Helper()
	if !bytes.HasSuffix(b, []byte("\n")) || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", b)
	}
	// OTLP/JSON writes ids in hex where protojson reads base64: turn
	// them into base64, after checking them.
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				want := map[string]int{"traceId": 32, "spanId": 16, "parentSpanId": 16}[k]
				if s, ok := e.(string); ok && want != 0 {
					if len(s) != want || !hexID.MatchString(s) {
						t.Errorf("%s %q: want %d lowercase hex digits", k, s, want)
					}
					raw, _ := hex.DecodeString(s)
					x[k] = base64.StdEncoding.EncodeToString(raw)
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	pb, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var td tracepb.TracesData
	if err := protojson.Unmarshal(pb, &td); err != nil {
		t.Fatalf("not OTLP TracesData: %v\n%s", err, b)
	}
	type key struct{ trace, span string }
	byID := map[key]*tracepb.Span{}
	var all []*tracepb.Span
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				if len(s.TraceId) != 16 || len(s.SpanId) != 8 || (s.ParentSpanId != nil && len(s.ParentSpanId) != 8) {
					t.Errorf("span %s: ids of %d, %d and %d bytes", s.Name, len(s.TraceId), len(s.SpanId), len(s.ParentSpanId))
				}
				k := key{string(s.TraceId), string(s.SpanId)}
				if byID[k] != nil {
					t.Errorf("span %s: its id is another span's", s.Name)
				}
				byID[k] = s
				all = append(all, s)
			}
		}
	}
	roots := map[string]int{}
	for _, s := range all {
		if s.EndTimeUnixNano < s.StartTimeUnixNano || s.StartTimeUnixNano == 0 {
			t.Errorf("span %s: from %d to %d", s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano)
		}
		op := strings.Fields(s.Name)[0]
		if len(s.ParentSpanId) == 0 {
			roots[string(s.TraceId)]++
			if op != "invoke_agent" || s.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
				t.Errorf("root span %s of kind %v; want invoke_agent, internal", s.Name, s.Kind)
			}
			continue
		}
		p := byID[key{string(s.TraceId), string(s.ParentSpanId)}]
		if p == nil {
			t.Errorf("span %s: its parent is not in its trace", s.Name)
			continue
		}
		if !strings.HasPrefix(p.Name, "invoke_agent") {
			t.Errorf("span %s: its parent is %s; want the turn's span", s.Name, p.Name)
		}
		if s.StartTimeUnixNano < p.StartTimeUnixNano || s.EndTimeUnixNano > p.EndTimeUnixNano {
			t.Errorf("span %s [%d, %d] is not within its parent %s [%d, %d]", s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano,
				p.Name, p.StartTimeUnixNano, p.EndTimeUnixNano)
		}
		wantKind := map[string]tracepb.Span_SpanKind{"chat": tracepb.Span_SPAN_KIND_CLIENT, "execute_tool": tracepb.Span_SPAN_KIND_INTERNAL}[op]
		if wantKind == 0 || s.Kind != wantKind {
			t.Errorf("span %s of kind %v; want %v", s.Name, s.Kind, wantKind)
		}
		if len(s.Attributes) == 0 || s.Attributes[0].Key != "gen_ai.operation.name" || s.Attributes[0].Value.GetStringValue() != op {
			t.Errorf("span %s: its first attribute is not gen_ai.operation.name=%s", s.Name, op)
		}
	}
	for trace, n := range roots {
		if n != 1 {
			t.Errorf("trace %x has %d roots", trace, n)
		}
	}
	for _, s := range all {
		if roots[string(s.TraceId)] == 0 {
			t.Errorf("span %s: its trace has no root", s.Name)
		}
	}
}

// TestNoWorld: without a world's name the root span is "invoke_agent", and
// no attribute is empty.
func TestNoWorld(t *testing.T) {
	d := otlp.Build([]*session.Turn{turn("answer", 10, &session.Round{Model: mc("stop", 0, 10)})}, otlp.Options{})
	b, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	checkOTLP(t, b)
	if s := d.ResourceSpans[0].ScopeSpans[0].Spans[0]; s.Name != "invoke_agent" {
		t.Errorf("root span %q; want invoke_agent", s.Name)
	}
	if bytes.Contains(b, []byte(`{"stringValue":""}`)) {
		t.Errorf("an empty attribute: %s", b)
	}
	if d.Spans() != 2 {
		t.Errorf("%d spans; want 2", d.Spans())
	}
}
