package realwire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Recordings of the native APIs: Anthropic's Messages API (api
// "anthropic") and the Gemini API (api "gemini").

// anthropicMsg and anthropicBlock are the parts of a Messages request
// that are read.
type (
	anthropicMsg struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	anthropicBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  *string         `json:"thinking"`
		Signature *string         `json:"signature"`
		Data      string          `json:"data"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
)

// anthropicBlocks returns a message's content as blocks.
func anthropicBlocks(content json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(content, &bs)
	return bs
}

// fromAnthropic reads a Messages request into t.
func (t *Turn) fromAnthropic(body map[string]json.RawMessage) error {
	_ = json.Unmarshal(body["max_tokens"], &t.MaxTokens)
	t.TokenField = "max_tokens"
	if v := body["system"]; len(v) > 0 {
		var text string
		for _, b := range anthropicBlocks(v) {
			text += b.Text
		}
		t.Instructions = &text
	}
	var thinking struct {
		Type         string `json:"type"`
		BudgetTokens int64  `json:"budget_tokens"`
	}
	_ = json.Unmarshal(body["thinking"], &thinking)
	var oc struct {
		Effort string `json:"effort"`
	}
	_ = json.Unmarshal(body["output_config"], &oc)
	switch {
	case oc.Effort != "":
		t.ReasoningEffort = &oc.Effort
	case thinking.Type == "enabled":
		// The effort whose budget demiurge sends nearest the recorded one.
		e := "low"
		switch {
		case thinking.BudgetTokens >= 16384:
			e = "high"
		case thinking.BudgetTokens >= 8192:
			e = "medium"
		case thinking.BudgetTokens < 2048:
			e = "minimal"
		}
		t.ReasoningEffort = &e
	}
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(body["tool_choice"], &tc) == nil {
		t.ToolChoice = map[string]string{"auto": "auto", "any": "required", "none": "none", "tool": tc.Name}[tc.Type]
	}
	var tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if v := body["tools"]; len(v) > 0 {
		if err := json.Unmarshal(v, &tools); err != nil {
			return fmt.Errorf("realwire: tools: %w", err)
		}
		var flat []map[string]any
		for _, tl := range tools {
			f := map[string]any{"type": "function", "name": tl.Name, "parameters": tl.InputSchema}
			if tl.Description != "" {
				f["description"] = tl.Description
			}
			flat = append(flat, f)
		}
		t.Tools, _ = json.Marshal(flat)
	}
	var msgs []anthropicMsg
	if err := json.Unmarshal(body["messages"], &msgs); err != nil {
		return fmt.Errorf("realwire: messages: %w", err)
	}
	add := func(v any) {
		b, _ := json.Marshal(v)
		t.Items = append(t.Items, b)
	}
	for i, m := range msgs {
		for _, b := range anthropicBlocks(m.Content) {
			switch {
			case b.Type == "text" && m.Role == "assistant":
				add(map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": b.Text, "annotations": []any{}}}})
			case b.Type == "text":
				add(map[string]string{"role": m.Role, "content": b.Text})
			case b.Type == "thinking":
				rs := map[string]any{"type": "reasoning", "summary": []any{}, "anthropic": map[string]string{"type": "thinking", "signature": deref(b.Signature)}}
				if th := deref(b.Thinking); th != "" {
					rs["content"] = []any{map[string]string{"type": "reasoning_text", "text": th}}
				}
				add(rs)
			case b.Type == "redacted_thinking":
				add(map[string]any{"type": "reasoning", "summary": []any{}, "anthropic": map[string]string{"type": "redacted_thinking", "data": b.Data}})
			case b.Type == "tool_use":
				add(map[string]string{"type": "function_call", "call_id": b.ID, "name": b.Name, "arguments": compact(b.Input)})
			case b.Type == "tool_result":
				var text string
				if json.Unmarshal(b.Content, &text) != nil {
					for _, c := range anthropicBlocks(b.Content) {
						text += c.Text
					}
				}
				add(map[string]string{"type": "function_call_output", "call_id": b.ToolUseID, "output": text})
			default:
				return fmt.Errorf("realwire: message %d: block type %q", i, b.Type)
			}
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// compact returns JSON compacted ("{}" if it is empty).
func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil || buf.Len() == 0 {
		return "{}"
	}
	return buf.String()
}

// geminiContent and geminiPart are the parts of a generateContent request
// that are read.
type (
	geminiContent struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	}
	geminiPart struct {
		Text             *string `json:"text"`
		Thought          bool    `json:"thought"`
		ThoughtSignature string  `json:"thoughtSignature"`
		FunctionCall     *struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
		FunctionResponse *struct {
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	}
)

// GeminiSkipSignatures are the thought signatures Google documents for
// function calls another model made, as they go on the wire (base64).
var GeminiSkipSignatures = []string{
	base64.StdEncoding.EncodeToString([]byte("context_engineering_is_the_way_to_go")),
	base64.StdEncoding.EncodeToString([]byte("skip_thought_signature_validator")),
}

// isSkip reports whether a signature is one of GeminiSkipSignatures.
func isSkip(sig string) bool {
	d := sigBytes(sig)
	for _, s := range GeminiSkipSignatures {
		if d != "" && d == sigBytes(s) {
			return true
		}
	}
	return false
}

// sigBytes decodes a signature from base64 in either alphabet (clients
// re-encode them: pydantic-ai sends back URL-safe what Gemini sent in the
// standard alphabet); "" if it is not base64.
func sigBytes(s string) string {
	s = strings.TrimRight(s, "=")
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return string(b)
	}
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return string(b)
	}
	return ""
}

// SameSignature reports whether two thought signatures are the same bytes.
func SameSignature(a, b string) bool {
	return a == b || (sigBytes(a) != "" && sigBytes(a) == sigBytes(b))
}

// fromGemini reads a generateContent request into t, the model and the
// stream from its URL.
func (t *Turn) fromGemini(rawURL string, body map[string]json.RawMessage) error {
	if u, err := url.Parse(rawURL); err == nil {
		p := u.Path
		if i := strings.Index(p, "/models/"); i >= 0 {
			m, method, _ := strings.Cut(p[i+len("/models/"):], ":")
			t.Model, t.Stream = m, method == "streamGenerateContent"
		}
	}
	var gc struct {
		MaxOutputTokens uint64           `json:"maxOutputTokens"`
		Temperature     *json.RawMessage `json:"temperature"`
		ThinkingConfig  struct {
			ThinkingLevel  string `json:"thinkingLevel"`
			ThinkingBudget *int   `json:"thinkingBudget"`
		} `json:"thinkingConfig"`
	}
	_ = json.Unmarshal(body["generationConfig"], &gc)
	t.MaxTokens, t.TokenField = gc.MaxOutputTokens, "maxOutputTokens"
	if gc.Temperature != nil {
		s := string(*gc.Temperature)
		t.Temperature = &s
	}
	if l := strings.ToLower(gc.ThinkingConfig.ThinkingLevel); l != "" {
		t.ReasoningEffort = &l
	}
	if v := body["systemInstruction"]; len(v) > 0 {
		var c geminiContent
		_ = json.Unmarshal(v, &c)
		var text string
		for _, p := range c.Parts {
			text += deref(p.Text)
		}
		t.Instructions = &text
	}
	var tools []struct {
		FunctionDeclarations []map[string]json.RawMessage `json:"functionDeclarations"`
	}
	_ = json.Unmarshal(body["tools"], &tools)
	var flat []map[string]any
	for _, tl := range tools {
		for _, d := range tl.FunctionDeclarations {
			var name, desc string
			_ = json.Unmarshal(d["name"], &name)
			_ = json.Unmarshal(d["description"], &desc)
			params := json.RawMessage(`{"type":"object","properties":{}}`)
			for _, k := range []string{"parametersJsonSchema", "parameters_json_schema", "parameters"} {
				if v, ok := d[k]; ok {
					params = v
					break
				}
			}
			f := map[string]any{"type": "function", "name": name, "parameters": params}
			if desc != "" {
				f["description"] = desc
			}
			flat = append(flat, f)
		}
	}
	if flat != nil {
		t.Tools, _ = json.Marshal(flat)
	}
	var tc struct {
		FunctionCallingConfig struct {
			Mode    string   `json:"mode"`
			Allowed []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	}
	if json.Unmarshal(body["toolConfig"], &tc) == nil {
		switch fc := tc.FunctionCallingConfig; {
		case fc.Mode == "ANY" && len(fc.Allowed) == 1:
			t.ToolChoice = fc.Allowed[0]
		case fc.Mode == "ANY":
			t.ToolChoice = "required"
		case fc.Mode == "AUTO":
			t.ToolChoice = "auto"
		case fc.Mode == "NONE":
			t.ToolChoice = "none"
		}
	}
	var contents []geminiContent
	if err := json.Unmarshal(body["contents"], &contents); err != nil {
		return fmt.Errorf("realwire: contents: %w", err)
	}
	add := func(v any) {
		b, _ := json.Marshal(v)
		t.Items = append(t.Items, b)
	}
	// Calls without an id are paired with their responses by order.
	var open []string
	n := 0
	for i, c := range contents {
		for _, p := range c.Parts {
			extra := map[string]string{}
			if p.ThoughtSignature != "" {
				extra["thoughtSignature"] = p.ThoughtSignature
			}
			switch {
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				if id == "" {
					n++
					id = "call_recorded_" + strconv.Itoa(n)
				}
				open = append(open, id)
				item := map[string]any{"type": "function_call", "call_id": id, "name": p.FunctionCall.Name, "arguments": compact(p.FunctionCall.Args)}
				if !isSkip(p.ThoughtSignature) {
					item["gemini"] = extra // a call Gemini made; a skip signature marks another model's
				}
				add(item)
			case p.FunctionResponse != nil:
				id := p.FunctionResponse.ID
				if id == "" && len(open) > 0 {
					id = open[0]
				}
				if i := indexOf(open, id); i >= 0 {
					open = append(open[:i], open[i+1:]...)
				}
				add(map[string]string{"type": "function_call_output", "call_id": id, "output": responseText(p.FunctionResponse.Response)})
			case p.Text != nil && p.Thought:
				add(map[string]any{"type": "reasoning", "summary": []any{map[string]string{"type": "summary_text", "text": *p.Text}}, "gemini": extra})
			case p.Text != nil && c.Role == "model":
				item := map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": *p.Text, "annotations": []any{}}}}
				if len(extra) > 0 {
					item["gemini"] = extra
				}
				add(item)
			case p.Text != nil:
				add(map[string]string{"role": "user", "content": *p.Text})
			default:
				return fmt.Errorf("realwire: contents[%d]: a part of no kind read here", i)
			}
		}
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// responseText is the text of a function response: the one string it
// holds ({"return_value": "Mexico"}), else its JSON.
func responseText(r json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(r, &m) == nil && len(m) == 1 {
		for _, v := range m {
			var s string
			if json.Unmarshal(v, &s) == nil {
				return s
			}
		}
	}
	return compact(r)
}

// issued returns the signatures the recording's responses gave: the
// thinking blocks' (thinking → signature) and the redacted blocks' data
// (Anthropic), or the parts' thought signatures (Gemini).
func (r *Recording) issued() (thinking map[string]string, data, sigs map[string]bool) {
	thinking, data, sigs = map[string]string{}, map[string]bool{}, map[string]bool{}
	for _, it := range r.Interactions {
		var bodies [][]byte
		if it.Response.BodyText != nil {
			for _, line := range strings.Split(*it.Response.BodyText, "\n") {
				if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
					bodies = append(bodies, []byte(strings.TrimSpace(d)))
				}
			}
		} else {
			bodies = append(bodies, it.Response.Body)
		}
		// A stream's thinking comes in deltas, by block index.
		text, sig := map[int]string{}, map[int]string{}
		for _, b := range bodies {
			var ev struct {
				Index        int             `json:"index"`
				Content      json.RawMessage `json:"content"`
				ContentBlock json.RawMessage `json:"content_block"`
				Delta        struct {
					Type      string `json:"type"`
					Thinking  string `json:"thinking"`
					Signature string `json:"signature"`
				} `json:"delta"`
				Candidates []struct {
					Content geminiContent `json:"content"`
				} `json:"candidates"`
			}
			if json.Unmarshal(b, &ev) != nil {
				continue
			}
			for _, blk := range anthropicBlocks(ev.Content) {
				if blk.Type == "thinking" {
					thinking[deref(blk.Thinking)] = deref(blk.Signature)
				}
				if blk.Type == "redacted_thinking" {
					data[blk.Data] = true
				}
			}
			var start anthropicBlock
			if json.Unmarshal(ev.ContentBlock, &start) == nil && start.Type == "redacted_thinking" {
				data[start.Data] = true
			}
			switch ev.Delta.Type {
			case "thinking_delta":
				text[ev.Index] += ev.Delta.Thinking
			case "signature_delta":
				sig[ev.Index] += ev.Delta.Signature
			}
			for _, c := range ev.Candidates {
				for _, p := range c.Content.Parts {
					if p.ThoughtSignature != "" {
						sigs[sigBytes(p.ThoughtSignature)] = true
					}
				}
			}
		}
		for i, s := range sig {
			thinking[text[i]] = s
		}
	}
	return thinking, data, sigs
}

// Refuse returns the error the recording's provider answers a request
// with, or nil: the rules of Refusal, and for the native APIs the rules of
// their reasoning, which the provider enforces with an HTTP 400:
//
//   - Anthropic refuses a thinking block whose signature is not the one it
//     gave with that thinking (altered or missing), a redacted_thinking
//     block whose data it did not give, and — with thinking enabled — an
//     assistant message whose tool calls the request answers that does
//     not begin with its thinking;
//   - Gemini refuses a thought signature it did not give (Google's skip
//     signatures aside), and, for Gemini 3, a function call of the
//     current turn that comes without its signature.
//
// The signatures given are those of the recording's responses.
func (r *Recording) Refuse(body []byte) error {
	if err := Refusal(r.Vendor, r.API, body); err != nil {
		return err
	}
	switch r.API {
	case "anthropic":
		return r.refuseAnthropic(body)
	case "gemini":
		return r.refuseGemini(body)
	}
	return nil
}

func (r *Recording) refuseAnthropic(body []byte) error {
	var req struct {
		Thinking struct {
			Type string `json:"type"`
		} `json:"thinking"`
		Messages []anthropicMsg `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return ProviderMessage("There was an error parsing the body of your request.")
	}
	thinking, data, _ := r.issued()
	last := -1
	for i, m := range req.Messages {
		for j, b := range anthropicBlocks(m.Content) {
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch b.Type {
			case "thinking":
				if b.Signature == nil || *b.Signature == "" {
					return ProviderMessage(where + ".thinking.signature: Field required")
				}
				if thinking[deref(b.Thinking)] != *b.Signature {
					return ProviderMessage(where + ": Invalid `signature` in `thinking` block")
				}
			case "redacted_thinking":
				if !data[b.Data] {
					return ProviderMessage(where + ": Invalid `data` in `redacted_thinking` block")
				}
			}
		}
		if m.Role == "assistant" {
			last = i
		}
	}
	if req.Thinking.Type == "enabled" && last >= 0 && last == len(req.Messages)-2 {
		bs := anthropicBlocks(req.Messages[last].Content)
		calls := false
		for _, b := range bs {
			calls = calls || b.Type == "tool_use"
		}
		if calls && bs[0].Type != "thinking" && bs[0].Type != "redacted_thinking" {
			return ProviderMessage(fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", last, bs[0].Type))
		}
	}
	return nil
}

func (r *Recording) refuseGemini(body []byte) error {
	var req struct {
		Contents []geminiContent `json:"contents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return ProviderMessage("Invalid JSON payload received.")
	}
	_, _, sigs := r.issued()
	model := ""
	for _, it := range r.Interactions {
		if it.Request != nil && strings.Contains(it.Request.URL, "gemini-3") {
			model = "gemini-3"
		}
	}
	turn := 0
	for i, c := range req.Contents {
		if c.Role == "user" {
			for _, p := range c.Parts {
				if p.Text != nil {
					turn = i + 1
				}
			}
		}
	}
	for i, c := range req.Contents {
		calls := 0
		for j, p := range c.Parts {
			if s := p.ThoughtSignature; s != "" && !isSkip(s) && !sigs[sigBytes(s)] {
				return ProviderMessage(fmt.Sprintf("Corrupted thought signature. (contents[%d].parts[%d])", i, j))
			}
			if p.FunctionCall != nil {
				calls++
				if model == "gemini-3" && calls == 1 && i >= turn && p.ThoughtSignature == "" {
					return ProviderMessage(fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, j+1))
				}
			}
		}
	}
	return nil
}
