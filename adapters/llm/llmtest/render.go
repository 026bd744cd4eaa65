package llmtest

import (
	"encoding/json"
)

// Responses API shapes, in the field order the API writes.
type (
	responseObject struct {
		ID                 string          `json:"id"`
		Object             string          `json:"object"`
		CreatedAt          int64           `json:"created_at"`
		Status             string          `json:"status"`
		Error              *responseError  `json:"error"`
		IncompleteDetails  *incomplete     `json:"incomplete_details"`
		Instructions       json.RawMessage `json:"instructions"`
		MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
		Model              string          `json:"model"`
		Output             []any           `json:"output"`
		ParallelToolCalls  bool            `json:"parallel_tool_calls"`
		PreviousResponseID json.RawMessage `json:"previous_response_id"`
		Store              json.RawMessage `json:"store"`
		Temperature        json.RawMessage `json:"temperature"`
		ToolChoice         json.RawMessage `json:"tool_choice"`
		Tools              json.RawMessage `json:"tools"`
		Usage              *responseUsage  `json:"usage"`
	}
	responseError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	incomplete struct {
		Reason string `json:"reason"`
	}
	responseUsage struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int64 `json:"total_tokens"`
		// Cost is OpenRouter's: the answer's cost in US dollars.
		Cost *float64 `json:"cost,omitempty"`
	}
	reasoningItem struct {
		ID               string        `json:"id"`
		Type             string        `json:"type"`
		Summary          []summaryPart `json:"summary"`
		EncryptedContent *string       `json:"encrypted_content,omitempty"`
	}
	summaryPart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	messageItem struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Content []any  `json:"content"`
		Role    string `json:"role"`
	}
	outputText struct {
		Type        string `json:"type"`
		Annotations []any  `json:"annotations"`
		Logprobs    []any  `json:"logprobs"`
		Text        string `json:"text"`
	}
	refusalPart struct {
		Type    string `json:"type"`
		Refusal string `json:"refusal"`
	}
	functionCallItem struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
	}
)

// rawOr returns the request's field, or def if the request has none.
func (a *answer) rawOr(key, def string) json.RawMessage {
	if v, ok := a.raw[key]; ok {
		return v
	}
	return json.RawMessage(def)
}

// outputItems returns the turn's Responses output items, complete.
func (a *answer) outputItems() []any {
	t := a.turn
	var out []any
	if t.Reasoning != "" {
		rs := reasoningItem{ID: "rs_" + a.hexID("rs", 0, 48), Type: "reasoning", Summary: []summaryPart{{Type: "summary_text", Text: t.Reasoning}}}
		if a.wantsEncrypted() {
			ec := a.encryptedContent()
			rs.EncryptedContent = &ec
		}
		out = append(out, rs)
	}
	if t.Text != "" || t.Refusal != "" {
		msg := messageItem{ID: "msg_" + a.hexID("msg", 0, 48), Type: "message", Status: "completed", Role: "assistant"}
		if t.Text != "" {
			msg.Content = append(msg.Content, outputText{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: t.Text})
		}
		if t.Refusal != "" {
			msg.Content = append(msg.Content, refusalPart{Type: "refusal", Refusal: t.Refusal})
		}
		out = append(out, msg)
	}
	for i, c := range t.Calls {
		out = append(out, functionCallItem{ID: "fc_" + a.hexID("fc", i, 48), Type: "function_call", Status: "completed", Arguments: c.Arguments, CallID: a.callID(i), Name: c.Name})
	}
	if out == nil {
		out = []any{}
	}
	return out
}

// responseObject returns the response object; status "" means final.
func (a *answer) responseObject(status string) responseObject {
	t := a.turn
	r := responseObject{
		ID: "resp_" + a.hexID("resp", 0, 48), Object: "response", CreatedAt: a.created(),
		Status:             "completed",
		Instructions:       a.rawOr("instructions", "null"),
		MaxOutputTokens:    a.rawOr("max_output_tokens", "null"),
		Model:              a.model(),
		Output:             a.outputItems(),
		ParallelToolCalls:  true,
		PreviousResponseID: a.rawOr("previous_response_id", "null"),
		Store:              a.rawOr("store", "true"),
		Temperature:        a.rawOr("temperature", "1.0"),
		ToolChoice:         a.rawOr("tool_choice", `"auto"`),
		Tools:              a.rawOr("tools", "[]"),
	}
	switch {
	case status != "":
		r.Status, r.Output = status, []any{}
		return r
	case t.Failed != nil:
		r.Status = "failed"
		e := mergeError(ErrorBody{Code: "server_error", Message: "The model failed to generate a response."}, *t.Failed)
		r.Error = &responseError{Code: e.Code, Message: e.Message}
		r.Output = []any{}
	case t.Incomplete != "":
		r.Status = "incomplete"
		r.IncompleteDetails = &incomplete{Reason: t.Incomplete}
	}
	if t.NoUsage {
		return r
	}
	u := a.usage()
	r.Usage = &responseUsage{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.Input + u.Output}
	r.Usage.InputTokensDetails.CachedTokens = u.Cached
	r.Usage.OutputTokensDetails.ReasoningTokens = u.Reasoning
	r.Usage.Cost = t.Cost
	return r
}

// responsesEvents returns the stream of a Responses answer: created,
// in_progress, the added/delta/done events of each output item, and the
// final response.completed (or .incomplete, .failed), or an "error" event.
func (a *answer) responsesEvents() []sseEvent {
	var events []sseEvent
	add := func(typ string, fields map[string]any) {
		if fields == nil {
			fields = map[string]any{}
		}
		fields["type"] = typ
		fields["sequence_number"] = len(events)
		events = append(events, sseEvent{name: typ, data: mustJSON(fields)})
	}
	add("response.created", map[string]any{"response": a.responseObject("in_progress")})
	add("response.in_progress", map[string]any{"response": a.responseObject("in_progress")})
	if e := a.turn.StreamError; e != nil {
		full := mergeError(ErrorBody{Code: "server_error", Message: "The server had an error while processing your request."}, *e)
		fields := map[string]any{"code": full.Code, "message": full.Message, "param": nil}
		if full.Param != "" {
			fields["param"] = full.Param
		}
		add("error", fields)
		return events
	}
	final := a.responseObject("")
	for i, it := range final.Output {
		switch it := it.(type) {
		case reasoningItem:
			add("response.output_item.added", map[string]any{"output_index": i, "item": it})
			add("response.output_item.done", map[string]any{"output_index": i, "item": it})
		case messageItem:
			started := it
			started.Status, started.Content = "in_progress", []any{}
			add("response.output_item.added", map[string]any{"output_index": i, "item": started})
			for ci, part := range it.Content {
				base := func() map[string]any {
					return map[string]any{"item_id": it.ID, "output_index": i, "content_index": ci}
				}
				switch part := part.(type) {
				case outputText:
					empty := part
					empty.Text = ""
					f := base()
					f["part"] = empty
					add("response.content_part.added", f)
					for _, w := range words(part.Text) {
						f := base()
						f["delta"], f["logprobs"] = w, []any{}
						add("response.output_text.delta", f)
					}
					f = base()
					f["text"], f["logprobs"] = part.Text, []any{}
					add("response.output_text.done", f)
				case refusalPart:
					empty := part
					empty.Refusal = ""
					f := base()
					f["part"] = empty
					add("response.content_part.added", f)
					for _, w := range words(part.Refusal) {
						f := base()
						f["delta"] = w
						add("response.refusal.delta", f)
					}
					f = base()
					f["refusal"] = part.Refusal
					add("response.refusal.done", f)
				}
				f := base()
				f["part"] = part
				add("response.content_part.done", f)
			}
			add("response.output_item.done", map[string]any{"output_index": i, "item": it})
		case functionCallItem:
			started := it
			started.Status, started.Arguments = "in_progress", ""
			add("response.output_item.added", map[string]any{"output_index": i, "item": started})
			for _, piece := range chunks(it.Arguments, 12) {
				add("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": i, "delta": piece})
			}
			add("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": i, "arguments": it.Arguments, "name": it.Name})
			add("response.output_item.done", map[string]any{"output_index": i, "item": it})
		}
	}
	end := "response.completed"
	switch final.Status {
	case "incomplete":
		end = "response.incomplete"
	case "failed":
		end = "response.failed"
	}
	add(end, map[string]any{"response": final})
	return events
}

// Chat Completions shapes.
type (
	chatCompletion struct {
		ID                string       `json:"id"`
		Object            string       `json:"object"`
		Created           int64        `json:"created"`
		Model             string       `json:"model"`
		Choices           []chatChoice `json:"choices"`
		Usage             *chatUsage   `json:"usage"`
		SystemFingerprint string       `json:"system_fingerprint"`
	}
	chatChoice struct {
		Index        int             `json:"index"`
		Message      chatMessage     `json:"message"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason string          `json:"finish_reason"`
	}
	chatMessage struct {
		Role        string         `json:"role"`
		Content     *string        `json:"content"`
		Refusal     *string        `json:"refusal"`
		ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
		Annotations []any          `json:"annotations"`
	}
	chatToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function chatFunction `json:"function"`
	}
	chatFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	chatUsage struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
			AudioTokens  int64 `json:"audio_tokens"`
			// CacheWriteTokens is OpenRouter's count of the prompt
			// tokens written to the cache of the provider behind it.
			CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
			AudioTokens     int64 `json:"audio_tokens"`
		} `json:"completion_tokens_details"`
		// Cost is OpenRouter's and the gateways': the answer's cost in
		// US dollars.
		Cost *float64 `json:"cost,omitempty"`
	}
)

func (a *answer) chatID() string { return "chatcmpl-" + a.hexID("chatcmpl", 0, 29) }

func (a *answer) chatFinish() string {
	switch {
	case a.turn.Incomplete == "content_filter":
		return "content_filter"
	case a.turn.Incomplete != "":
		return "length"
	case len(a.turn.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (a *answer) chatUsage() *chatUsage {
	if a.turn.NoUsage {
		return nil
	}
	u := a.usage()
	cu := &chatUsage{PromptTokens: u.Input, CompletionTokens: u.Output, TotalTokens: u.Input + u.Output}
	cu.PromptTokensDetails.CachedTokens = u.Cached
	cu.PromptTokensDetails.CacheWriteTokens = u.CacheWrite
	cu.CompletionTokensDetails.ReasoningTokens = u.Reasoning
	cu.Cost = a.turn.Cost
	return cu
}

// chatCompletion returns the chat.completion object of the turn.
func (a *answer) chatCompletion() chatCompletion {
	t := a.turn
	msg := chatMessage{Role: "assistant", Annotations: []any{}}
	if t.Text != "" {
		msg.Content = &t.Text
	}
	if t.Refusal != "" {
		msg.Refusal = &t.Refusal
	}
	for i, c := range t.Calls {
		msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: a.callID(i), Type: "function", Function: chatFunction{Name: c.Name, Arguments: c.Arguments}})
	}
	return chatCompletion{
		ID: a.chatID(), Object: "chat.completion", Created: a.created(), Model: a.model(),
		Choices:           []chatChoice{{Index: 0, Message: msg, Logprobs: json.RawMessage("null"), FinishReason: a.chatFinish()}},
		Usage:             a.chatUsage(),
		SystemFingerprint: "fp_llmtest",
	}
}

// chatChunks returns the stream of a chat answer: a role chunk, content
// word by word, each tool call (id and name, then argument pieces), the
// finish chunk, a usage chunk if stream_options.include_usage, and [DONE].
func (a *answer) chatChunks() []sseEvent {
	t := a.turn
	var events []sseEvent
	chunk := func(delta map[string]any, finish any) {
		c := map[string]any{
			"id": a.chatID(), "object": "chat.completion.chunk", "created": a.created(), "model": a.model(),
			"system_fingerprint": "fp_llmtest",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		events = append(events, sseEvent{data: mustJSON(c)})
	}
	chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
	if e := t.StreamError; e != nil {
		full := mergeError(defaultErrors[500], *e)
		events = append(events, sseEvent{data: mustJSON(map[string]any{"error": full})})
		return events
	}
	for _, w := range words(t.Text) {
		chunk(map[string]any{"content": w}, nil)
	}
	for _, w := range words(t.Refusal) {
		chunk(map[string]any{"refusal": w}, nil)
	}
	for i, c := range t.Calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": a.callID(i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil)
		for _, piece := range chunks(c.Arguments, 12) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": piece},
			}}}, nil)
		}
	}
	chunk(map[string]any{}, a.chatFinish())
	var opts struct {
		IncludeUsage bool `json:"include_usage"`
	}
	_ = json.Unmarshal(a.raw["stream_options"], &opts)
	if opts.IncludeUsage && !a.turn.NoUsage {
		events = append(events, sseEvent{data: mustJSON(map[string]any{
			"id": a.chatID(), "object": "chat.completion.chunk", "created": a.created(), "model": a.model(),
			"system_fingerprint": "fp_llmtest", "choices": []any{}, "usage": a.chatUsage(),
		})})
	}
	events = append(events, sseEvent{data: []byte("[DONE]")})
	return events
}
