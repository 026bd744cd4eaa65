package llmtest

import (
	"reflect"
	"testing"
)

func TestExchange(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want Exchange
	}{
		{
			name: "responses",
			body: `{"instructions": "be brief", "tools": [{"type": "function", "name": "bash"}],
				"input": [{"role": "user", "content": "first"}, {"type": "function_call", "call_id": "c0", "name": "bash", "arguments": "{}"},
				{"type": "function_call_output", "call_id": "c0", "output": "old"}, {"role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
				{"role": "user", "content": [{"type": "input_text", "text": "second"}]},
				{"type": "function_call", "call_id": "c1", "name": "workspace_read", "arguments": "{\"path\":\"a\"}"},
				{"type": "function_call_output", "call_id": "c1", "output": "hello"}]}`,
			want: Exchange{Instructions: "be brief", User: "second", Users: 2, Tools: []string{"bash"},
				Calls: []Call{{Name: "workspace_read", Arguments: `{"path":"a"}`, CallID: "c1"}}, Outputs: map[string]string{"c1": "hello"}},
		},
		{
			name: "chat",
			body: `{"tools": [{"type": "function", "function": {"name": "bash"}}], "messages": [{"role": "system", "content": "be brief"},
				{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
				{"role": "tool", "tool_call_id": "c1", "content": "out"}]}`,
			want: Exchange{Instructions: "be brief", User: "hi", Users: 1, Tools: []string{"bash"},
				Calls: []Call{{Name: "bash", Arguments: `{}`, CallID: "c1"}}, Outputs: map[string]string{"c1": "out"}},
		},
		{name: "not json", body: `<html>`, want: Exchange{Outputs: map[string]string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Request{Body: []byte(tc.body)}.Exchange()
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v; want %+v", got, tc.want)
			}
			if tc.name == "responses" && got.Output(0) != "hello" {
				t.Errorf("Output(0) = %q", got.Output(0))
			}
		})
	}
}
