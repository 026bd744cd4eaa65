package realwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Turn is what a recorded request asked for, in the shape demiurge keeps
// a chat: the transcript as Responses input items, the tools in the flat
// Responses shape, and the settings.
type Turn struct {
	Model        string
	Instructions *string
	// Items are the transcript's items, each a JSON object: messages
	// ({"role":…,"content":…}), function_call, function_call_output and
	// reasoning items. A Chat Completions request's messages are turned
	// into these; an assistant message's reasoning_content (or reasoning)
	// becomes a reasoning item with a reasoning_text part.
	Items []json.RawMessage
	// Tools is the JSON array of the request's function tools, flat
	// ({"type":"function","name",…}); nil if it sent none.
	Tools json.RawMessage
	// ToolChoice is "auto", "none", "required", a function name, or "".
	ToolChoice      string
	MaxTokens       uint64
	TokenField      string // the field that carried MaxTokens
	Temperature     *string
	ReasoningEffort *string
	Stream          bool
}

// Turn reads the request as api ("responses", "chat", "anthropic" or
// "gemini") wrote it.
func (r *Request) Turn(api string) (Turn, error) {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return Turn{}, fmt.Errorf("realwire: request body: %w", err)
	}
	var t Turn
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(body[k], &s)
		return s
	}
	t.Model = str("model")
	_ = json.Unmarshal(body["stream"], &t.Stream)
	if v, ok := body["temperature"]; ok && string(v) != "null" {
		s := string(bytes.TrimSpace(v))
		t.Temperature = &s
	}
	for _, k := range []string{"max_output_tokens", "max_completion_tokens", "max_tokens"} {
		if v, ok := body[k]; ok && string(v) != "null" {
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return t, fmt.Errorf("realwire: %s %s: %w", k, v, err)
			}
			t.MaxTokens, t.TokenField = n, k
			break
		}
	}
	if v, ok := body["reasoning_effort"]; ok {
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			t.ReasoningEffort = &s
		}
	}
	if v, ok := body["reasoning"]; ok {
		var rs struct {
			Effort string `json:"effort"`
		}
		if json.Unmarshal(v, &rs) == nil && rs.Effort != "" {
			t.ReasoningEffort = &rs.Effort
		}
	}
	t.ToolChoice = toolChoice(body["tool_choice"])
	tools, err := flatTools(body["tools"])
	if err != nil {
		return t, err
	}
	t.Tools = tools
	switch api {
	case "anthropic":
		err = t.fromAnthropic(body)
	case "gemini":
		t.MaxTokens, t.Temperature = 0, nil
		err = t.fromGemini(r.URL, body)
	case "chat":
		err = t.fromMessages(body["messages"])
	default:
		if s := str("instructions"); s != "" {
			t.Instructions = &s
		}
		err = t.fromInput(body["input"])
	}
	return t, err
}

// toolChoice reads a tool_choice of either API.
func toolChoice(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var o struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(v, &o)
	if o.Name != "" {
		return o.Name
	}
	return o.Function.Name
}

// flatTools returns a request's function tools in the flat Responses
// shape.
func flatTools(v json.RawMessage) (json.RawMessage, error) {
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(v, &tools); err != nil {
		return nil, fmt.Errorf("realwire: tools: %w", err)
	}
	out := make([]map[string]json.RawMessage, 0, len(tools))
	for _, tl := range tools {
		if fn, ok := tl["function"]; ok {
			var inner map[string]json.RawMessage
			if err := json.Unmarshal(fn, &inner); err != nil {
				return nil, fmt.Errorf("realwire: tool function: %w", err)
			}
			inner["type"] = json.RawMessage(`"function"`)
			tl = inner
		}
		if d, ok := tl["description"]; ok && string(d) == "null" {
			delete(tl, "description")
		}
		if _, ok := tl["parameters"]; !ok {
			tl["parameters"] = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, tl)
	}
	return json.Marshal(out)
}

// fromInput reads a Responses request's input.
func (t *Turn) fromInput(v json.RawMessage) error {
	var s string
	if json.Unmarshal(v, &s) == nil {
		b, _ := json.Marshal(map[string]string{"role": "user", "content": s})
		t.Items = append(t.Items, b)
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return fmt.Errorf("realwire: input: %w", err)
	}
	t.Items = append(t.Items, items...)
	return nil
}

// chatMessage is the part of a Chat Completions message that is read.
type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	ToolCallID       string          `json:"tool_call_id"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// fromMessages turns a Chat Completions request's messages into items; the
// first system message becomes the instructions.
func (t *Turn) fromMessages(v json.RawMessage) error {
	var msgs []chatMessage
	if err := json.Unmarshal(v, &msgs); err != nil {
		return fmt.Errorf("realwire: messages: %w", err)
	}
	add := func(v any) {
		b, _ := json.Marshal(v)
		t.Items = append(t.Items, b)
	}
	for i, m := range msgs {
		text := contentText(m.Content)
		switch m.Role {
		case "system", "developer":
			if i == 0 && t.Instructions == nil {
				t.Instructions = &text
				continue
			}
			add(map[string]string{"role": "system", "content": text})
		case "user":
			add(map[string]string{"role": "user", "content": text})
		case "assistant":
			for _, r := range []*string{m.ReasoningContent, m.Reasoning} {
				if r != nil && *r != "" {
					add(map[string]any{"type": "reasoning", "summary": []any{}, "content": []any{map[string]string{"type": "reasoning_text", "text": *r}}})
					break
				}
			}
			if text != "" {
				add(map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}})
			}
			for _, c := range m.ToolCalls {
				add(map[string]string{"type": "function_call", "call_id": c.ID, "name": c.Function.Name, "arguments": c.Function.Arguments})
			}
		case "tool":
			add(map[string]string{"type": "function_call_output", "call_id": m.ToolCallID, "output": text})
		default:
			return fmt.Errorf("realwire: message %d: role %q", i, m.Role)
		}
	}
	return nil
}

// contentText returns a message content's text: the string, or its text
// parts joined.
func contentText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(v, &parts)
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// IsModelOutput reports whether a transcript item is something the model
// wrote (an assistant message, reasoning, a function call).
func IsModelOutput(item json.RawMessage) bool {
	var h struct {
		Type string `json:"type"`
		Role string `json:"role"`
	}
	_ = json.Unmarshal(item, &h)
	switch h.Type {
	case "reasoning", "function_call":
		return true
	case "message", "":
		return h.Role == "assistant"
	}
	return false
}
