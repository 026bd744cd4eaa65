package llmtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Anthropic's Messages API, as the server plays it: answers in its shapes
// (a message, or its event stream), its error bodies, its prompt cache
// (see promptCache), and refusals of what the API refuses (see
// refuseAnthropic).

// thinkingSignature is the signature the server gives a thinking block:
// a hash of its text, so that a block sent back altered, or without its
// signature, is refused.
func thinkingSignature(thinking string) string {
	sum := sha256.Sum256([]byte("llmtest|thinking|" + thinking))
	return "Eq" + base64.StdEncoding.EncodeToString(append(sum[:], sum[:16]...))
}

// sealRedacted is the data of a redacted_thinking block the server gives:
// the turn's text, sealed.
func sealRedacted(data string) string {
	payload := base64.StdEncoding.EncodeToString([]byte(data))
	sum := sha256.Sum256([]byte("llmtest|redacted|" + payload))
	return payload + "." + base64.RawStdEncoding.EncodeToString(sum[:12])
}

// redactedValid reports whether d is data the server sealed.
func redactedValid(d string) bool {
	payload, _, ok := strings.Cut(d, ".")
	return ok && sealRedacted(mustDecode(payload)) == d
}

func mustDecode(s string) string {
	b, _ := base64.StdEncoding.DecodeString(s)
	return string(b)
}

// anthropicID returns an id of kind ("msg", "toolu") for index i.
func (a *answer) anthropicID(kind string, i int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	sum := sha256.Sum256(fmt.Appendf(nil, "llmtest|%s|%d|%d", kind, a.seq, i))
	var b strings.Builder
	b.WriteString(kind + "_01")
	for _, c := range sum[:22] {
		b.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return b.String()
}

// anthropicCallID returns the tool_use id of call i.
func (a *answer) anthropicCallID(i int) string {
	if id := a.turn.Calls[i].CallID; id != "" {
		return id
	}
	return a.anthropicID("toolu", i)
}

// anthropicStop is the answer's stop_reason.
func (a *answer) anthropicStop() string {
	t := a.turn
	switch {
	case t.Incomplete == "max_output_tokens" || t.Incomplete == "max_tokens" || t.Incomplete == "length":
		return "max_tokens"
	case t.Incomplete != "":
		return t.Incomplete
	case t.Refusal != "":
		return "refusal"
	case len(t.Calls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

// anthropicBlocks returns the answer's content blocks, complete.
func (a *answer) anthropicBlocks() []map[string]any {
	t := a.turn
	var out []map[string]any
	if t.Reasoning != "" {
		out = append(out, map[string]any{"type": "thinking", "thinking": t.Reasoning, "signature": thinkingSignature(t.Reasoning)})
	}
	if t.Redacted != "" {
		out = append(out, map[string]any{"type": "redacted_thinking", "data": sealRedacted(t.Redacted)})
	}
	if t.Text != "" {
		out = append(out, map[string]any{"type": "text", "text": t.Text})
	}
	if t.WebSearch != "" {
		id := a.anthropicID("srvtoolu", 0)
		out = append(out, map[string]any{"type": "server_tool_use", "id": id, "name": "web_search", "input": map[string]any{"query": t.WebSearch}},
			map[string]any{"type": "web_search_tool_result", "tool_use_id": id, "content": []any{}})
	}
	for i, c := range t.Calls {
		var input any = json.RawMessage(c.Arguments)
		if !json.Valid([]byte(c.Arguments)) {
			input = map[string]any{} // the API's input is always an object
		}
		out = append(out, map[string]any{"type": "tool_use", "id": a.anthropicCallID(i), "name": c.Name, "input": input})
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out
}

// anthropicUsage returns the answer's usage object, with the prompt
// cache's reads and writes.
func (a *answer) anthropicUsage() map[string]any {
	u := a.usage()
	read, write := u.Cached, u.CacheWrite
	if a.turn.Usage == nil {
		read, write = a.cached.read, a.cached.write
		u.Input = max(u.Input, read+write)
	}
	m := map[string]any{
		"input_tokens": u.Input - read - write, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
		"output_tokens": u.Output, "service_tier": "standard",
	}
	if t := a.turn.Reasoning; t != "" || u.Reasoning > 0 {
		r := u.Reasoning
		if a.turn.Usage == nil {
			r = 16 + tokens(t)
			m["output_tokens"] = u.Output + r
		}
		m["output_tokens_details"] = map[string]any{"thinking_tokens": r}
	}
	return m
}

// anthropicMessage returns the Messages API response of the turn.
func (a *answer) anthropicMessage() map[string]any {
	m := map[string]any{
		"id": a.anthropicID("msg", 0), "type": "message", "role": "assistant", "model": a.model(),
		"content": a.anthropicBlocks(), "stop_reason": a.anthropicStop(), "stop_sequence": nil,
		"usage": a.anthropicUsage(),
	}
	if a.turn.Refusal != "" {
		m["stop_details"] = map[string]any{"type": "refusal", "category": "cyber", "explanation": a.turn.Refusal}
	}
	return m
}

// anthropicEvents returns the event stream of the turn: message_start,
// each block's start, deltas (text word by word, thinking then its
// signature, a tool's input in pieces) and stop, message_delta with the
// stop reason and the output tokens, message_stop; a ping after the
// start.
func (a *answer) anthropicEvents() []sseEvent {
	var events []sseEvent
	add := func(typ string, fields map[string]any) {
		fields["type"] = typ
		events = append(events, sseEvent{name: typ, data: mustJSON(fields)})
	}
	msg := a.anthropicMessage()
	usage := msg["usage"].(map[string]any)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	startUsage := map[string]any{}
	for k, v := range usage {
		startUsage[k] = v
	}
	startUsage["output_tokens"] = 1
	start["usage"] = startUsage
	delete(start, "stop_details")
	add("message_start", map[string]any{"message": start})
	add("ping", map[string]any{})
	if e := a.turn.StreamError; e != nil {
		typ := e.Type
		if typ == "" {
			typ = "overloaded_error"
		}
		msg := e.Message
		if msg == "" {
			msg = "Overloaded"
		}
		add("error", map[string]any{"error": map[string]any{"type": typ, "message": msg}})
		return events
	}
	for i, b := range msg["content"].([]map[string]any) {
		switch b["type"] {
		case "thinking":
			add("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, w := range words(b["thinking"].(string)) {
				add("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": w}})
			}
			add("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "signature_delta", "signature": b["signature"]}})
		case "text":
			add("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, w := range words(b["text"].(string)) {
				add("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": w}})
			}
		case "tool_use":
			add("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in := string(mustJSON(b["input"]))
			for _, piece := range chunks(in, 12) {
				add("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
			}
		default:
			add("content_block_start", map[string]any{"index": i, "content_block": b})
		}
		add("content_block_stop", map[string]any{"index": i})
	}
	delta := map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil}
	if d, ok := msg["stop_details"]; ok {
		delta["stop_details"] = d
	}
	add("message_delta", map[string]any{"delta": delta, "usage": usage})
	add("message_stop", map[string]any{})
	return events
}

// apiError is an error answer in an API's own shape.
type apiError struct {
	api    string
	status int
	typ    string // Anthropic's error type; Gemini's status ("INVALID_ARGUMENT")
	msg    string
	header map[string]string
	// retryDelay is a Gemini RetryInfo delay ("2s"); "" for none.
	retryDelay string
}

func (e *apiError) write(w http.ResponseWriter) {
	for k, v := range e.header {
		w.Header().Set(k, v)
	}
	var body any
	if e.api == APIGemini {
		inner := map[string]any{"code": e.status, "message": e.msg, "status": e.typ}
		if e.retryDelay != "" {
			inner["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": e.retryDelay}}
		}
		body = map[string]any{"error": inner}
	} else {
		body = map[string]any{"type": "error", "error": map[string]any{"type": e.typ, "message": e.msg}, "request_id": "req_llmtest"}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(mustJSON(body))
}

// anthropicErrors are Anthropic's error types and messages by status.
var anthropicErrors = map[int][2]string{
	400: {"invalid_request_error", "Invalid request."},
	401: {"authentication_error", "invalid x-api-key"},
	403: {"permission_error", "Your API key does not have permission to use the specified resource."},
	404: {"not_found_error", "model: claude-unknown"},
	413: {"request_too_large", "Request exceeds the maximum allowed number of bytes."},
	429: {"rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute."},
	500: {"api_error", "Internal server error"},
	529: {"overloaded_error", "Overloaded"},
}

// geminiErrors are the Gemini API's statuses and messages by HTTP status.
var geminiErrors = map[int][2]string{
	400: {"INVALID_ARGUMENT", "Request contains an invalid argument."},
	401: {"UNAUTHENTICATED", "API key not valid. Please pass a valid API key."},
	403: {"PERMISSION_DENIED", "The caller does not have permission"},
	404: {"NOT_FOUND", "models/gemini-unknown is not found for API version v1beta, or is not supported for generateContent."},
	429: {"RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details."},
	500: {"INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"},
	503: {"UNAVAILABLE", "The model is overloaded. Please try again later."},
}

// nativeError is the error answer of an error turn of the native APIs.
func (a *answer) nativeError() *apiError {
	t := a.turn
	table := anthropicErrors
	if a.req.API == APIGemini {
		table = geminiErrors
	}
	d, ok := table[t.Status]
	if !ok {
		d = [2]string{"api_error", http.StatusText(t.Status)}
		if a.req.API == APIGemini {
			d[0] = "UNKNOWN"
		}
	}
	e := &apiError{api: a.req.API, status: t.Status, typ: d[0], msg: d[1]}
	if t.Error != nil {
		if t.Error.Type != "" {
			e.typ = t.Error.Type
		}
		if t.Error.Message != "" {
			e.msg = t.Error.Message
		}
	}
	if a.req.API == APIGemini && t.Status == 429 {
		e.retryDelay = "0s"
		if v, ok := t.Header["Retry-After"]; ok {
			e.retryDelay = v + "s"
		}
	}
	if a.req.API == APIAnthropic && t.Status == 429 {
		e.header = map[string]string{"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
			"anthropic-ratelimit-requests-reset": "2026-01-01T00:00:30Z"}
	}
	return e
}

// refuse returns the refusal of a request the API it names would refuse,
// nil if it would take it (and for the OpenAI APIs, whose checks are
// elsewhere).
func refuse(req Request, raw map[string]json.RawMessage) *apiError {
	switch req.API {
	case APIAnthropic:
		if msg := refuseAnthropic(raw); msg != "" {
			return &apiError{api: APIAnthropic, status: http.StatusBadRequest, typ: "invalid_request_error", msg: msg}
		}
	case APIGemini:
		if msg := refuseGemini(req.Model, raw); msg != "" {
			return &apiError{api: APIGemini, status: http.StatusBadRequest, typ: "INVALID_ARGUMENT", msg: msg}
		}
	}
	return nil
}

// anthropicFields are the top-level fields of a Messages request (API
// version 2026-10-21, which has no sampling parameters).
var anthropicFields = []string{"model", "max_tokens", "messages", "system", "tools", "tool_choice", "thinking", "output_config",
	"stream", "metadata", "stop_sequences", "cache_control", "service_tier", "container", "inference_geo", "speed", "diagnostics"}

// aMessage and aBlock are the parts of a request's messages the checks
// read.
type (
	aMessage struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	aBlock struct {
		Type         string          `json:"type"`
		Text         *string         `json:"text"`
		Thinking     *string         `json:"thinking"`
		Signature    *string         `json:"signature"`
		Data         string          `json:"data"`
		ID           string          `json:"id"`
		ToolUseID    string          `json:"tool_use_id"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
)

// blocksOf returns a message's content as blocks (a string is one text
// block).
func blocksOf(content json.RawMessage) []aBlock {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []aBlock{{Type: "text", Text: &s}}
	}
	var bs []aBlock
	_ = json.Unmarshal(content, &bs)
	return bs
}

// refuseAnthropic returns the message of Anthropic's refusal of a request,
// or "": each rule is one the API documents (extended thinking, tool use,
// prompt caching); the words are the fake's, after the API's.
func refuseAnthropic(raw map[string]json.RawMessage) string {
	for k := range raw {
		if !slices.Contains(anthropicFields, k) {
			return k + ": Extra inputs are not permitted"
		}
	}
	var maxTokens int64
	if err := json.Unmarshal(raw["max_tokens"], &maxTokens); err != nil {
		return "max_tokens: Field required"
	}
	var msgs []aMessage
	if err := json.Unmarshal(raw["messages"], &msgs); err != nil || len(msgs) == 0 {
		return "messages: at least one message is required"
	}
	var thinking struct {
		Type         string `json:"type"`
		BudgetTokens int64  `json:"budget_tokens"`
	}
	_ = json.Unmarshal(raw["thinking"], &thinking)
	var choice struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw["tool_choice"], &choice)
	if thinking.Type == "enabled" || thinking.Type == "adaptive" {
		if choice.Type == "any" || choice.Type == "tool" {
			return "Thinking may not be enabled when tool_choice forces tool use."
		}
	}
	if thinking.Type == "enabled" && (thinking.BudgetTokens < 1024 || thinking.BudgetTokens >= maxTokens) {
		return "`max_tokens` must be greater than `thinking.budget_tokens`, which must be at least 1024"
	}
	// Cache markers: at most four.
	markers := strings.Count(string(raw["tools"]), `"cache_control"`) + strings.Count(string(raw["system"]), `"cache_control"`) +
		strings.Count(string(raw["messages"]), `"cache_control"`)
	if markers > 4 {
		return fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", markers)
	}
	var pending []string // tool_use ids the next message must answer
	lastAssistant := -1
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" && m.Role != "system" {
			return fmt.Sprintf("messages.%d.role: Input should be 'user', 'assistant' or 'system'", i)
		}
		bs := blocksOf(m.Content)
		if len(bs) == 0 {
			return fmt.Sprintf("messages.%d: all messages must have non-empty content", i)
		}
		var answered []string
		for j, b := range bs {
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch b.Type {
			case "text":
				if b.Text == nil || *b.Text == "" {
					return where + ".text: text content blocks must be non-empty"
				}
			case "thinking":
				if m.Role != "assistant" {
					return where + ": thinking blocks may only be in assistant messages"
				}
				if b.Signature == nil || *b.Signature == "" {
					return where + ".signature: Field required"
				}
				if b.Thinking == nil || thinkingSignature(*b.Thinking) != *b.Signature {
					return where + ": Invalid `signature` in `thinking` block"
				}
				if len(b.CacheControl) > 0 {
					return where + ": thinking blocks cannot be cached directly (cache_control)"
				}
			case "redacted_thinking":
				if !redactedValid(b.Data) {
					return where + ": Invalid `data` in `redacted_thinking` block"
				}
			case "tool_use":
				if m.Role != "assistant" {
					return where + ": tool_use blocks may only be in assistant messages"
				}
			case "tool_result":
				if !slices.Contains(pending, b.ToolUseID) {
					return fmt.Sprintf("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", where, b.ToolUseID)
				}
				answered = append(answered, b.ToolUseID)
			}
		}
		if len(pending) > 0 {
			for _, id := range pending {
				if !slices.Contains(answered, id) {
					return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, id)
				}
			}
		}
		pending = nil
		if m.Role == "assistant" {
			lastAssistant = i
			for _, b := range bs {
				if b.Type == "tool_use" {
					pending = append(pending, b.ID)
				}
			}
		}
	}
	if len(pending) > 0 && lastAssistant < len(msgs)-1 {
		return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s.", lastAssistant, pending[0])
	}
	// With budgeted thinking, the assistant message whose tool calls the
	// request answers must begin with its thinking.
	if thinking.Type == "enabled" && lastAssistant >= 0 && lastAssistant == len(msgs)-2 {
		bs := blocksOf(msgs[lastAssistant].Content)
		hasTool := slices.ContainsFunc(bs, func(b aBlock) bool { return b.Type == "tool_use" })
		if hasTool && bs[0].Type != "thinking" && bs[0].Type != "redacted_thinking" {
			return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", lastAssistant, bs[0].Type)
		}
	}
	return ""
}
