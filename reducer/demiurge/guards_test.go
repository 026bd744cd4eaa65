package demiurge_test

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

func TestGuards(t *testing.T) {
	call := func(args string) llmtest.Turn {
		return llmtest.Turn{Calls: []llmtest.Call{{Name: "workspace_read", Arguments: args}}}
	}
	tests := []struct {
		name  string
		turns []llmtest.Turn
		want  []string // substrings of the entries, in order
	}{
		{
			name:  "repeated call",
			turns: []llmtest.Turn{call(`{"path":"a"}`), call(`{ "path" : "a" }`), call(`{"path":"a"}`), {Text: "never asked"}},
			want: []string{"tool_output workspace_read [ok]: contents of a", "tool_output workspace_read [ok]: contents of a",
				`tool_call workspace_read [not_run]: {"path":"a"}`, "tool_output workspace_read [not_run]: not run: the model called workspace_read with the same arguments 3 times (max_repeats)",
				"stop: the model called workspace_read with the same arguments 3 times"},
		},
		{
			name:  "max rounds",
			turns: []llmtest.Turn{call(`{"path":"1"}`), call(`{"path":"2"}`), call(`{"path":"3"}`), call(`{"path":"4"}`), {Text: "never asked"}},
			want:  []string{"contents of 1", "contents of 2", "contents of 3", "[not_run]: not run: the turn reached 4 model rounds (max_rounds)", "stop: the turn reached 4 model rounds"},
		},
		{
			name:  "malformed arguments",
			turns: []llmtest.Turn{call(`{"path": "a"`), {Text: "sorry"}},
			want:  []string{"tool_output workspace_read [error]: error: the arguments of workspace_read are not valid JSON (unexpected EOF)", "assistant: sorry", "done [stop]: 2 rounds"},
		},
		{
			name:  "output limits",
			turns: []llmtest.Turn{call(`{"path":"big.md"}`), call(`{"path":"huge.md"}`), {Text: "ok"}},
			// workspace_read keeps its own limit (10000 + tools.NoteRoom), not
			// the chat's 200: the 900 bytes whole, and 10512 bytes and the
			// note of the cut, 10549 in all (the entries keep a preview).
			want: []string{"tool_output workspace_read [ok]: bbbb", "b… [900 bytes in all]\n",
				"tool_output workspace_read [ok]: hhhh", "h… [10549 bytes in all]\n"},
		},
		{
			name:  "stderr of a call that succeeded",
			turns: []llmtest.Turn{call(`{"path":"warn.md"}`), {Text: "ok"}},
			want:  []string{"tool_output workspace_read [ok]: text | [stderr] | workspace_read: warn.md: 2 bytes are not UTF-8"},
		},
		{
			name:  "model error",
			turns: []llmtest.Turn{{Status: 500}},
			want:  []string{"error: llm.generate failed: llm: openai-responses: server error (HTTP 500, server_error): The server had an error", "[request req_", "stop: the model call failed"},
		},
		{
			name:  "model cut off",
			turns: []llmtest.Turn{{Text: "a long answer that never ends", CutOff: true}},
			want:  []string{"error: llm.generate failed: llm: openai-responses: connection broken (HTTP 200)", "stop: the model call failed"},
		},
		{
			name:  "a reply cut by the token limit: its calls are not run",
			turns: []llmtest.Turn{{Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"a"}`}}, Incomplete: "max_output_tokens"}, {Text: "ok"}},
			want: []string{`tool_call workspace_read [cut]: {"path":"a"}`,
				`tool_output workspace_read [error]: error: your reply was cut off (finish reason "length") before its tool calls were complete, so this call was not run.`,
				"assistant: ok", "done [stop]: 2 rounds"},
		},
		{
			name:  "an answer cut by the token limit",
			turns: []llmtest.Turn{{Text: "the start of", Incomplete: "max_output_tokens"}},
			want:  []string{"assistant: the start of", "done [length]: 1 round,"},
		},
		{
			name:  "refusal",
			turns: []llmtest.Turn{{Refusal: "I can't help with that."}},
			want:  []string{"assistant: I can't help with that.", "done [refusal]"},
		},
		{
			name:  "usage unknown",
			turns: []llmtest.Turn{{Text: "hi", NoUsage: true}},
			want:  []string{"notice: the provider reported no token usage for this call, so the token budget (1000000) cannot count it", "assistant: hi", "done [stop]"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cw := newChatWorld(t, llmtest.Script{Turns: tc.turns})
			cw.say(t, 1, "go")
			got := cw.timeline(t)
			at := 0
			for _, w := range tc.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("entries lack %q after offset %d:\n%s", w, at, got)
				}
				at += i + len(w)
			}
			// Whatever stopped the turn, the session replays.
			checkReplay(t, cw)
			st := cw.state(t)
			if tc.name == "usage unknown" && (st.UsageUnknown != 1 || st.CostUnknown != 1) {
				t.Errorf("usage_unknown %v, cost_unknown %v; want 1 and 1", st.UsageUnknown, st.CostUnknown)
			}
		})
	}
}
