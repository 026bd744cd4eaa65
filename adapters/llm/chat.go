package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// buildChatParams makes the request of the Chat Completions API for model
// m, all but its messages (see spliceChat); the messages are made from the
// same transcript as the Responses request's input (chatMessages):
//
//   - Params.Instructions becomes a leading system message; system and
//     developer messages become system messages;
//   - user messages keep their text, image and file parts;
//   - assistant messages keep their text (output_text and refusal parts);
//   - function_call items become tool_calls of an assistant message (the
//     one just before them, if the calls follow it directly);
//   - function_call_output items become role "tool" messages;
//   - reasoning items are dropped, unless m takes its reasoning back
//     (Model.ReasoningEcho): then the text of the reasoning before an
//     assistant message goes with it in that field ("" if it had none);
//   - any other item type is an error.
//
// The reply is capped with m's token-limit field (max_tokens or
// max_completion_tokens), at most its limit; a temperature and a
// reasoning effort are sent only if m takes them. A stream asks for its
// usage (stream_options.include_usage), which servers such as Ollama and
// vLLM send only when asked.
//
// previous_response_id is ignored: Chat Completions is stateless, so the
// whole transcript is always sent.
func buildChatParams(p Params, tools []tool, stream bool, m Model) (openai.ChatCompletionNewParams, error) {
	var cp openai.ChatCompletionNewParams
	cp.Model = shared.ChatModel(p.Model)
	if n, err := tokenLimit(p.MaxTokens, m); err != nil {
		return cp, err
	} else if n > 0 {
		if m.ChatTokenLimit == MaxCompletionTokens {
			cp.MaxCompletionTokens = openai.Int(n)
		} else {
			cp.MaxTokens = openai.Int(n)
		}
	}
	if p.Temperature != nil {
		t, err := parseTemperature(*p.Temperature)
		if err != nil {
			return cp, err
		}
		if m.Temperature {
			cp.Temperature = openai.Float(t)
		}
	}
	if p.ReasoningEffort != nil && *p.ReasoningEffort != "" && m.ReasoningEffort {
		cp.ReasoningEffort = shared.ReasoningEffort(*p.ReasoningEffort)
	}
	if stream {
		cp.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}

	for _, t := range tools {
		if t.typ != "function" {
			return cp, invalidf("tools: tool type %q is not supported by provider %s (only function tools are)", t.typ, ProviderChat)
		}
		ft, err := t.function()
		if err != nil {
			return cp, invalidf("tools: %v", err)
		}
		def := shared.FunctionDefinitionParam{
			Name:       ft.Name,
			Strict:     openai.Bool(ft.Strict),
			Parameters: shared.FunctionParameters(ft.Parameters),
		}
		if ft.Description != nil {
			def.Description = openai.String(*ft.Description)
		}
		cp.Tools = append(cp.Tools, openai.ChatCompletionFunctionTool(def))
	}

	if p.ToolChoice != nil {
		if err := checkToolChoice(*p.ToolChoice, tools); err != nil {
			return cp, err
		}
		switch p.ToolChoice.Kind {
		case ToolChoiceAuto:
			cp.ToolChoice.OfAuto = openai.String("auto")
		case ToolChoiceNone:
			cp.ToolChoice.OfAuto = openai.String("none")
		case ToolChoiceRequired:
			cp.ToolChoice.OfAuto = openai.String("required")
		case ToolChoiceTool:
			cp.ToolChoice.OfFunctionToolChoice = &openai.ChatCompletionNamedToolChoiceParam{
				Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: p.ToolChoice.Name},
			}
		}
	}

	if p.ResponseFormat != nil {
		js, schema, err := checkTextFormat(*p.ResponseFormat)
		if err != nil {
			return cp, err
		}
		cp.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   js.Name,
				Strict: openai.Bool(js.Strict),
				Schema: schema,
			},
		}
	}
	return cp, nil
}

// chatItem is the part of a Responses input item that a chat message is
// made from.
type chatItem struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	CallID       string          `json:"call_id"`
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments"`
	Output       json.RawMessage `json:"output"`
	ExtraContent json.RawMessage `json:"extra_content"` // a function call's, from a chat answer
	ChatFields   chatFields      `json:"chat_fields"`   // a reasoning item's, from a chat answer
}

// chatPart is one content part of a Responses input message.
type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	FileID   string `json:"file_id"`
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
}

// chatMessages converts transcript items to chat messages. The reasoning
// items before an assistant message (since the previous message) go back
// with it, by the rule of echo (Model.ReasoningEcho): "none" sends
// nothing; otherwise the reasoning fields that arrived with the answer
// (an item's chat_fields) go back as they arrived, and a field name
// ("reasoning_content") is also set on every assistant message, to the
// reasoning text ("" if it had none), for the providers that refuse an
// assistant message without it.
func chatMessages(items []item, echo string, refused []string) ([]openai.ChatCompletionMessageParamUnion, error) {
	var msgs []openai.ChatCompletionMessageParamUnion
	// open is the assistant message that function calls attach to: the
	// last message, if it is an assistant message.
	var open *openai.ChatCompletionAssistantMessageParam
	var reasoning strings.Builder // since the last message
	var fields chatFields         // likewise, as they arrived
	assistant := func(a *openai.ChatCompletionAssistantMessageParam) {
		if extra := echoFields(fields, reasoning.String(), echo, refused); extra != nil {
			a.SetExtraFields(extra)
		}
		reasoning.Reset()
		fields = nil
	}
	for _, it := range items {
		var ci chatItem
		if err := json.Unmarshal(it.raw, &ci); err != nil {
			return nil, invalidf("%s: %v", it.where(), err)
		}
		switch kind := it.kind(); kind {
		case "message":
			msg, asst, err := chatMessage(it, ci)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, msg)
			open = asst
			if asst != nil {
				assistant(asst)
			} else {
				reasoning.Reset()
				fields = nil
			}
		case "function_call":
			if ci.CallID == "" || ci.Name == "" {
				return nil, invalidf("%s: function_call needs call_id and name", it.where())
			}
			fn := &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: ci.CallID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      ci.Name,
					Arguments: argumentsText(ci.Arguments),
				},
			}
			if present(ci.ExtraContent) && echo != "none" {
				fn.SetExtraFields(map[string]any{"extra_content": ci.ExtraContent})
			}
			if open == nil {
				open = &openai.ChatCompletionAssistantMessageParam{}
				assistant(open)
				msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: open})
			}
			open.ToolCalls = append(open.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: fn})
		case "function_call_output":
			if ci.CallID == "" {
				return nil, invalidf("%s: function_call_output needs call_id", it.where())
			}
			text, err := chatTextParts(ci.Output)
			if err != nil {
				return nil, invalidf("%s: output: %v", it.where(), err)
			}
			msgs = append(msgs, openai.ToolMessage(text, ci.CallID))
			open = nil
		case "reasoning":
			// Sent back only with the assistant message that follows.
			reasoning.WriteString(reasoningText(it.raw))
			if len(ci.ChatFields) > 0 {
				fields = fields.merge(ci.ChatFields)
			}
		default:
			return nil, invalidf("%s: item type %q cannot be sent to provider %s", it.where(), kind, ProviderChat)
		}
	}
	return msgs, nil
}

// echoFields returns the fields an assistant message carries its
// reasoning back in (see chatMessages), nil for none; refused fields are
// never among them.
func echoFields(fields chatFields, text, echo string, refused []string) map[string]any {
	if echo == EchoNone {
		return nil
	}
	var extra map[string]any
	for k, v := range fields {
		if slices.Contains(reasoningFields, k) && !slices.Contains(refused, k) {
			if extra == nil {
				extra = map[string]any{}
			}
			extra[k] = v
		}
	}
	if echo != "" && !slices.Contains(refused, echo) {
		if _, ok := extra[echo]; !ok {
			if extra == nil {
				extra = map[string]any{}
			}
			extra[echo] = text
		}
	}
	return extra
}

// merge adds the fields of g to f (a new map): text is appended to text,
// a list to a list; anything else, g's wins.
func (f chatFields) merge(g chatFields) chatFields {
	out := maps.Clone(f)
	if out == nil {
		out = chatFields{}
	}
	for k, v := range g {
		prev, ok := out[k]
		if !ok {
			out[k] = v
			continue
		}
		var a, b string
		if json.Unmarshal(prev, &a) == nil && json.Unmarshal(v, &b) == nil {
			out[k], _ = json.Marshal(a + b)
			continue
		}
		var la, lb []json.RawMessage
		if json.Unmarshal(prev, &la) == nil && json.Unmarshal(v, &lb) == nil {
			out[k], _ = json.Marshal(append(la, lb...))
			continue
		}
		out[k] = v
	}
	return out
}

// reasoningText returns the reasoning text of a reasoning item: its
// reasoning_text content parts (what a Chat Completions model wrote as
// reasoning_content), joined.
func reasoningText(raw json.RawMessage) string {
	var r struct {
		Content []chatPart `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range r.Content {
		if p.Type == "reasoning_text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// chatMessage converts one message item. For an assistant message it also
// returns the message, for function calls to attach to.
func chatMessage(it item, ci chatItem) (openai.ChatCompletionMessageParamUnion, *openai.ChatCompletionAssistantMessageParam, error) {
	switch ci.Role {
	case "user":
		parts, text, isText, err := chatUserContent(ci.Content)
		if err != nil {
			return openai.ChatCompletionMessageParamUnion{}, nil, invalidf("%s: %v", it.where(), err)
		}
		if isText {
			return openai.UserMessage(text), nil, nil
		}
		return openai.UserMessage(parts), nil, nil
	case "system", "developer":
		text, err := chatTextParts(ci.Content)
		if err != nil {
			return openai.ChatCompletionMessageParamUnion{}, nil, invalidf("%s: %v", it.where(), err)
		}
		return openai.SystemMessage(text), nil, nil
	case "assistant":
		text, err := messageText(ci.Content)
		if err != nil {
			return openai.ChatCompletionMessageParamUnion{}, nil, invalidf("%s: %v", it.where(), err)
		}
		asst := &openai.ChatCompletionAssistantMessageParam{}
		if text != "" {
			asst.Content.OfString = openai.String(text)
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: asst}, asst, nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, nil, invalidf("%s: role %q is not user, system, developer or assistant", it.where(), ci.Role)
	}
}

// chatUserContent converts a user message's content: a string, or parts.
func chatUserContent(content json.RawMessage) (parts []openai.ChatCompletionContentPartUnionParam, text string, isText bool, err error) {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || c[0] != '[' {
		if err := json.Unmarshal(c, &text); err != nil {
			return nil, "", false, fmt.Errorf("content must be text or a list of parts")
		}
		return nil, text, true, nil
	}
	var ps []chatPart
	if err := json.Unmarshal(c, &ps); err != nil {
		return nil, "", false, fmt.Errorf("content parts: %v", err)
	}
	for i, p := range ps {
		switch p.Type {
		case "input_text", "output_text", "text":
			parts = append(parts, openai.TextContentPart(p.Text))
		case "input_image":
			if p.ImageURL == "" {
				return nil, "", false, fmt.Errorf("content[%d]: an input_image needs image_url for provider %s", i, ProviderChat)
			}
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: p.ImageURL, Detail: p.Detail}))
		case "input_file":
			var f openai.ChatCompletionContentPartFileFileParam
			if p.FileData != "" {
				f.FileData = openai.String(p.FileData)
			}
			if p.FileID != "" {
				f.FileID = openai.String(p.FileID)
			}
			if p.Filename != "" {
				f.Filename = openai.String(p.Filename)
			}
			parts = append(parts, openai.FileContentPart(f))
		default:
			return nil, "", false, fmt.Errorf("content[%d]: part type %q cannot be sent to provider %s", i, p.Type, ProviderChat)
		}
	}
	return parts, "", false, nil
}

// chatTextParts reads content that may only hold text: a string, or text
// parts, which are joined with newlines.
func chatTextParts(content json.RawMessage) (string, error) {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || c[0] != '[' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return "", fmt.Errorf("want text or a list of text parts")
		}
		return s, nil
	}
	var ps []chatPart
	if err := json.Unmarshal(c, &ps); err != nil {
		return "", fmt.Errorf("parts: %v", err)
	}
	texts := make([]string, 0, len(ps))
	for i, p := range ps {
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		default:
			return "", fmt.Errorf("part %d has type %q; provider %s takes only text here", i, p.Type, ProviderChat)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// rawChat is the part of a chat.completion object that is read.
type rawChat struct {
	ID      *string `json:"id"`
	Model   string  `json:"model"`
	Choices *[]struct {
		FinishReason *string `json:"finish_reason"`
		Message      *struct {
			Content json.RawMessage `json:"content"`
			Refusal *string         `json:"refusal"`
			// The reasoning fields of the dialects (see reasoningFields):
			// their values are kept as they arrived.
			ReasoningContent json.RawMessage `json:"reasoning_content"`
			Reasoning        json.RawMessage `json:"reasoning"`
			ReasoningDetails json.RawMessage `json:"reasoning_details"`
			ExtraContent     json.RawMessage `json:"extra_content"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
				// ExtraContent carries Gemini's thought signature
				// ({"google":{"thought_signature":…}}), which must go back
				// with the call.
				ExtraContent json.RawMessage `json:"extra_content"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage *chatUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// chatUsage is a chat.completion's usage, in every dialect's fields.
type chatUsage struct {
	PromptTokens        uint64  `json:"prompt_tokens"`
	CompletionTokens    uint64  `json:"completion_tokens"`
	TotalTokens         *uint64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens uint64 `json:"cached_tokens"`
		// CacheWriteTokens: OpenRouter's count of tokens written to an
		// upstream's cache (Anthropic's, behind it).
		CacheWriteTokens uint64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens uint64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// DeepSeek's cache hits, Moonshot's cached tokens.
	PromptCacheHitTokens *uint64 `json:"prompt_cache_hit_tokens"`
	CachedTokens         *uint64 `json:"cached_tokens"`
	// Anthropic's counts, as its OpenAI-compatible endpoint and some
	// gateways give them.
	CacheCreationInputTokens uint64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     uint64 `json:"cache_read_input_tokens"`
	// Provider-reported costs: OpenRouter's and the gateways' usage.cost
	// (US dollars), xAI's cost_in_usd_ticks (10^-10 US dollars).
	Cost           json.Number `json:"cost"`
	CostInUSDTicks json.Number `json:"cost_in_usd_ticks"`
}

// tokens normalises the usage: Input counts every input token (cached and
// cache-written ones included), Output every output token (reasoning
// included). Where a provider counts reasoning or cached tokens outside
// prompt_tokens or completion_tokens, total_tokens says so (it is then
// prompt + completion + the part left out), and the part is added back.
func (u *chatUsage) tokens() TokenUsage {
	t := TokenUsage{Input: u.PromptTokens, Output: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		t.CacheRead, t.CacheWrite = d.CachedTokens, d.CacheWriteTokens
	}
	switch {
	case t.CacheRead > 0:
	case u.PromptCacheHitTokens != nil:
		t.CacheRead = *u.PromptCacheHitTokens
	case u.CachedTokens != nil:
		t.CacheRead = *u.CachedTokens
	case u.CacheReadInputTokens > 0:
		t.CacheRead = u.CacheReadInputTokens
	}
	if t.CacheWrite == 0 {
		t.CacheWrite = u.CacheCreationInputTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		t.Reasoning = d.ReasoningTokens
	}
	if u.TotalTokens != nil {
		total := *u.TotalTokens
		sum := t.Input + t.Output
		switch {
		case t.Reasoning > 0 && total == sum+t.Reasoning:
			t.Output += t.Reasoning // reasoning counted outside completion_tokens (xAI)
		case t.CacheRead+t.CacheWrite > 0 && total == sum+t.CacheRead+t.CacheWrite:
			t.Input += t.CacheRead + t.CacheWrite // cache counted outside prompt_tokens
		case t.CacheRead > 0 && total == sum+t.CacheRead:
			t.Input += t.CacheRead
		}
	}
	return t
}

// cost returns the cost the provider reported for the call, in micro-USD,
// and the field it was read from; ok is false if it reported none.
func (u *chatUsage) cost() (microUSD uint64, field string, ok bool) {
	if f, err := u.CostInUSDTicks.Float64(); u.CostInUSDTicks != "" && err == nil && f >= 0 && f < 1e22 {
		return uint64(math.Round(f / 1e4)), "usage.cost_in_usd_ticks", true // a tick is 10^-10 USD
	}
	if f, err := u.Cost.Float64(); u.Cost != "" && err == nil && f >= 0 && f < 1e12 {
		return uint64(math.Round(f * 1e6)), "usage.cost", true
	}
	return 0, "", false
}

// reasoningFields are the fields of a Chat Completions assistant message
// that carry the model's reasoning in the dialects demiurge knows:
// reasoning_content (DeepSeek, Kimi, GLM, Qwen, vLLM, llama.cpp, xAI),
// reasoning and reasoning_details (OpenRouter, Vercel's AI gateway, Groq,
// Ollama), extra_content (Gemini's thought signature). Those that
// arrive in an answer are kept, as they arrived, in the reasoning item
// the answer is converted to (its "chat_fields"), and go back in the same
// form with the assistant message on the follow-up.
var reasoningFields = []string{"reasoning_content", "reasoning", "reasoning_details", "extra_content"}

// Items of the Responses-style output array a chat reply is converted to.
type (
	outMessage struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Status  string `json:"status"`
		Content []any  `json:"content"`
	}
	outText struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	outRefusal struct {
		Type    string `json:"type"`
		Refusal string `json:"refusal"`
	}
	outReasoning struct {
		Type    string `json:"type"`
		Summary []any  `json:"summary"`
		Content []any  `json:"content"`
		// ChatFields are the assistant message's reasoning fields as they
		// arrived (see reasoningFields), to go back with it; nil for
		// none.
		ChatFields chatFields `json:"chat_fields,omitempty"`
	}
	outCall struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
		// ExtraContent is the tool call's extra_content as it arrived
		// (Gemini's thought signature), to go back with the call.
		ExtraContent json.RawMessage `json:"extra_content,omitempty"`
	}
)

// parseChatBody reads a chat.completion object and converts its first
// choice to a Responses-style output array: a reasoning item
// {"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":…}]}
// if the message carries reasoning text (reasoning_content or reasoning),
// a message item
// {"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":…,"annotations":[]}]}
// (with a {"type":"refusal",…} part for a refusal; no message item if there
// is neither text nor refusal), then one
// {"type":"function_call","call_id":…,"name":…,"arguments":…,"status":"completed"}
// per tool call ("incomplete" if the reply was cut by its token limit). A
// tool call without an id gets "call_<response id>_<n>".
// It never panics; anything that is not a usable reply is a *parseError.
func parseChatBody(body []byte) (parsed, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return parsed{}, badResponse("body is not a JSON object: %s", clipText(string(body), 120))
	}
	if !utf8.Valid(trimmed) {
		return parsed{}, badResponse("body is not valid UTF-8")
	}
	var r rawChat
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return parsed{}, badResponse("body is not a chat.completion object: %v", err)
	}
	if r.Choices == nil {
		if len(r.Error) > 0 && string(r.Error) != "null" {
			_, msg, code, _ := errorFields(trimmed)
			return parsed{}, &parseError{kind: KindFailed, code: code, msg: msg}
		}
		return parsed{}, badResponse("chat.completion has no \"choices\"")
	}
	if len(*r.Choices) == 0 || (*r.Choices)[0].Message == nil {
		return parsed{}, badResponse("chat.completion has no choice with a message")
	}
	var out parsed
	if r.ID != nil {
		out.id = *r.ID
	}
	out.model = r.Model
	choice := (*r.Choices)[0]
	msg := choice.Message
	finish := ""
	if choice.FinishReason != nil {
		finish = *choice.FinishReason
	}

	var output []any
	fields := chatFields{}
	for i, raw := range []json.RawMessage{msg.ReasoningContent, msg.Reasoning, msg.ReasoningDetails, msg.ExtraContent} {
		if present(raw) {
			fields[reasoningFields[i]] = raw
		}
	}
	if it, ok := fields.item(); ok {
		output = append(output, it)
	}
	text, err := messageText(msg.Content)
	if err != nil {
		return parsed{}, badResponse("choices[0].message: %v", err)
	}
	var content []any
	if text != "" {
		content = append(content, outText{Type: "output_text", Text: text, Annotations: []any{}})
	}
	refused := msg.Refusal != nil && *msg.Refusal != ""
	if refused {
		content = append(content, outRefusal{Type: "refusal", Refusal: *msg.Refusal})
	}
	cut := finish == "length"
	status := "completed"
	if cut {
		status = "incomplete"
	}
	if len(content) > 0 {
		output = append(output, outMessage{Type: "message", Role: "assistant", Status: status, Content: content})
	}
	for i, tc := range msg.ToolCalls {
		id := tc.ID
		if id == "" {
			id = "call_" + idSafe(out.id) + "_" + strconv.Itoa(i)
		}
		if tc.Function.Name == "" {
			return parsed{}, badResponse("choices[0].message.tool_calls[%d] has no function name", i)
		}
		call := outCall{Type: "function_call", CallID: id, Name: tc.Function.Name, Arguments: argumentsText(tc.Function.Arguments), Status: status}
		if present(tc.ExtraContent) {
			call.ExtraContent = tc.ExtraContent
		}
		output = append(output, call)
	}
	if output == nil {
		output = []any{}
	}
	out.output, err = marshalNoEscape(output)
	if err != nil {
		return parsed{}, badResponse("convert reply: %v", err)
	}
	if err := parseOutputItems(out.output, &out); err != nil {
		return parsed{}, err
	}
	if r.Usage != nil {
		out.usageKnown = true
		out.usage = r.Usage.tokens()
		out.cost, out.costField, out.costKnown = r.Usage.cost()
	}
	out.finish = finishReason(finish, refused, len(out.calls) > 0)
	return out, nil
}

// finishReason is the receipt's finish reason for a reply the provider
// ended with reason (Chat Completions' finish_reason, or what a Responses
// status and its incomplete reason map to): "length" and
// "content_filter" whatever else the reply holds (its tool calls are
// cut), then "refusal" if the model refused, "tool_calls" if it called
// tools, the provider's reason if it gave another, else "stop".
func finishReason(reason string, refused, calls bool) string {
	switch {
	case reason == "length" || reason == "content_filter":
		return reason
	case refused:
		return "refusal"
	case calls:
		return "tool_calls"
	case reason == "" || reason == "tool_calls" || reason == "function_call":
		return "stop"
	}
	return reason
}

// idSafe keeps the letters, digits, '-' and '_' of s.
func idSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return -1
	}, s)
}

// marshalNoEscape encodes v as compact JSON without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// chatStream accumulates the chunks of a streamed chat completion into the
// chat.completion object a non-streamed call would have returned.
type chatStream struct {
	id, model string
	created   int64
	content   strings.Builder
	refusal   strings.Builder
	reasoning strings.Builder
	// field is the field the reasoning text came in (reasoning_content
	// or reasoning), "" if none did.
	field   string
	details []json.RawMessage // reasoning_details, merged by index and type
	extra   json.RawMessage   // the message's extra_content
	calls   []*streamCall
	finish  string
	usage   json.RawMessage
}

type streamCall struct {
	index     int64
	id, name  string
	arguments strings.Builder
	extra     json.RawMessage // extra_content
}

// chunk is the part of a chat.completion.chunk that is read.
type chunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Created int64  `json:"created"`
	Choices []struct {
		Index int64 `json:"index"`
		Delta struct {
			// Content is text, or (Mistral's Magistral) a list of parts:
			// {"type":"text","text"} and {"type":"thinking","thinking":[parts]}.
			Content          json.RawMessage   `json:"content"`
			Refusal          *string           `json:"refusal"`
			ReasoningContent *string           `json:"reasoning_content"`
			Reasoning        *string           `json:"reasoning"`
			ReasoningDetails []json.RawMessage `json:"reasoning_details"`
			ExtraContent     json.RawMessage   `json:"extra_content"`
			ToolCalls        []struct {
				Index    int64  `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
				ExtraContent json.RawMessage `json:"extra_content"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	// XGroq carries Groq's usage on a stream's last chunk.
	XGroq *struct {
		Usage json.RawMessage `json:"usage"`
	} `json:"x_groq"`
	Error json.RawMessage `json:"error"`
}

// deltaPart is a part of a content delta given as a list.
type deltaPart struct {
	Type     string      `json:"type"`
	Text     string      `json:"text"`
	Thinking []deltaPart `json:"thinking"`
}

// deltaContent splits a content delta into its text and its reasoning.
func deltaContent(raw json.RawMessage) (text, reasoning string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	if raw[0] == '"' {
		err = json.Unmarshal(raw, &text)
		return text, "", err
	}
	var parts []deltaPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", "", fmt.Errorf("content is neither text nor a list of parts: %v", err)
	}
	var t, r strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			t.WriteString(p.Text)
		case "thinking":
			for _, q := range p.Thinking {
				r.WriteString(q.Text)
			}
		}
	}
	return t.String(), r.String(), nil
}

// add folds one chunk in and returns the text delta it carries. A chunk
// {"error":{…}} is a KindFailed *parseError.
func (s *chatStream) add(data []byte) (string, error) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return "", badResponse("stream chunk is not a chat.completion.chunk: %v", err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return "", streamEventError(data)
	}
	if c.ID != "" {
		s.id = c.ID
	}
	if c.Model != "" {
		s.model = c.Model
	}
	if c.Created != 0 {
		s.created = c.Created
	}
	if len(c.Usage) > 0 && string(c.Usage) != "null" {
		s.usage = slices.Clone(c.Usage)
	} else if c.XGroq != nil && len(c.XGroq.Usage) > 0 && string(c.XGroq.Usage) != "null" && s.usage == nil {
		s.usage = slices.Clone(c.XGroq.Usage)
	}
	var delta strings.Builder
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // only the first choice is used
		}
		text, reasoning, err := deltaContent(ch.Delta.Content)
		if err != nil {
			return "", badResponse("stream chunk: choices[0].delta: %v", err)
		}
		s.content.WriteString(text)
		delta.WriteString(text)
		s.reasoning.WriteString(reasoning)
		if d := ch.Delta.Refusal; d != nil {
			s.refusal.WriteString(*d)
			delta.WriteString(*d)
		}
		if d := ch.Delta.ReasoningContent; d != nil {
			s.reasoning.WriteString(*d)
			s.noteField("reasoning_content", *d)
		} else if d := ch.Delta.Reasoning; d != nil {
			s.reasoning.WriteString(*d)
			s.noteField("reasoning", *d)
		}
		for _, d := range ch.Delta.ReasoningDetails {
			if err := s.addDetail(d); err != nil {
				return "", badResponse("stream chunk: choices[0].delta.reasoning_details: %v", err)
			}
		}
		if present(ch.Delta.ExtraContent) {
			s.extra = slices.Clone(ch.Delta.ExtraContent)
		}
		for _, tc := range ch.Delta.ToolCalls {
			sc := s.call(tc.Index)
			if tc.ID != "" {
				sc.id = tc.ID
			}
			if tc.Function.Name != "" {
				sc.name = tc.Function.Name
			}
			sc.arguments.WriteString(tc.Function.Arguments)
			if present(tc.ExtraContent) {
				sc.extra = slices.Clone(tc.ExtraContent)
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish = *ch.FinishReason
		}
	}
	return delta.String(), nil
}

// noteField notes the field reasoning text came in, the first that
// brought some.
func (s *chatStream) noteField(field, text string) {
	if s.field == "" && text != "" {
		s.field = field
	}
}

// addDetail folds one streamed reasoning_details entry in: an entry of the
// index and type of an earlier one continues it (its text, summary and
// data appended, its other fields taken), any other is a new entry.
func (s *chatStream) addDetail(raw json.RawMessage) error {
	var d map[string]json.RawMessage
	if err := json.Unmarshal(raw, &d); err != nil || d == nil {
		return fmt.Errorf("an entry is not an object")
	}
	for i, prevRaw := range s.details {
		var prev map[string]json.RawMessage
		if json.Unmarshal(prevRaw, &prev) != nil || string(prev["index"]) != string(d["index"]) || string(prev["type"]) != string(d["type"]) {
			continue
		}
		for k, v := range d {
			var a, b string
			if (k == "text" || k == "summary" || k == "data") && json.Unmarshal(prev[k], &a) == nil && json.Unmarshal(v, &b) == nil {
				prev[k], _ = json.Marshal(a + b)
				continue
			}
			prev[k] = v
		}
		merged, err := marshalNoEscape(prev)
		if err != nil {
			return err
		}
		s.details[i] = merged
		return nil
	}
	s.details = append(s.details, slices.Clone(raw))
	return nil
}

// call returns the call being accumulated at index, adding it if new.
func (s *chatStream) call(index int64) *streamCall {
	for _, c := range s.calls {
		if c.index == index {
			return c
		}
	}
	c := &streamCall{index: index}
	s.calls = append(s.calls, c)
	return c
}

// done reports whether the stream reached its end (a finish reason).
func (s *chatStream) done() bool { return s.finish != "" }

// assemble returns the chat.completion object of the stream.
func (s *chatStream) assemble() ([]byte, error) {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID           string          `json:"id"`
		Type         string          `json:"type"`
		Function     fn              `json:"function"`
		ExtraContent json.RawMessage `json:"extra_content,omitempty"`
	}
	type message struct {
		Role             string            `json:"role"`
		Content          *string           `json:"content"`
		Refusal          *string           `json:"refusal,omitempty"`
		ReasoningContent *string           `json:"reasoning_content,omitempty"`
		Reasoning        *string           `json:"reasoning,omitempty"`
		ReasoningDetails []json.RawMessage `json:"reasoning_details,omitempty"`
		ExtraContent     json.RawMessage   `json:"extra_content,omitempty"`
		ToolCalls        []call            `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	type completion struct {
		ID      string          `json:"id"`
		Object  string          `json:"object"`
		Created int64           `json:"created"`
		Model   string          `json:"model"`
		Choices []choice        `json:"choices"`
		Usage   json.RawMessage `json:"usage,omitempty"`
	}
	m := message{Role: "assistant"}
	if s.content.Len() > 0 {
		c := s.content.String()
		m.Content = &c
	}
	if s.refusal.Len() > 0 {
		r := s.refusal.String()
		m.Refusal = &r
	}
	if s.reasoning.Len() > 0 {
		// In the field it came in (reasoning_content for text that came
		// as a list of thinking parts).
		r := s.reasoning.String()
		if s.field == "reasoning" {
			m.Reasoning = &r
		} else {
			m.ReasoningContent = &r
		}
	}
	m.ReasoningDetails, m.ExtraContent = s.details, s.extra
	calls := slices.Clone(s.calls)
	slices.SortStableFunc(calls, func(a, b *streamCall) int { return cmp.Compare(a.index, b.index) })
	for _, c := range calls {
		m.ToolCalls = append(m.ToolCalls, call{ID: c.id, Type: "function", Function: fn{Name: c.name, Arguments: c.arguments.String()}, ExtraContent: c.extra})
	}
	return marshalNoEscape(completion{
		ID: s.id, Object: "chat.completion", Created: s.created, Model: s.model,
		Choices: []choice{{Index: 0, Message: m, FinishReason: s.finish}},
		Usage:   s.usage,
	})
}

// present reports whether a raw JSON value is there and says something:
// not absent, not null, not "".
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null" && string(raw) != `""`
}

// chatFields are an assistant message's reasoning fields (see
// reasoningFields), each as it arrived.
type chatFields map[string]json.RawMessage

// MarshalJSON writes the fields in the order of reasoningFields (and any
// other after them, sorted), so that equal fields make equal bytes.
func (f chatFields) MarshalJSON() ([]byte, error) {
	keys := slices.Sorted(maps.Keys(f))
	slices.SortStableFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(reasoningFields, a), slices.Index(reasoningFields, b)
		if ia < 0 {
			ia = len(reasoningFields)
		}
		if ib < 0 {
			ib = len(reasoningFields)
		}
		return ia - ib
	})
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(bytes.TrimSpace(f[k]))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// text returns the reasoning text the fields carry: reasoning_content,
// else reasoning, else the text and summaries of reasoning_details.
func (f chatFields) text() string {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		var s string
		if json.Unmarshal(f[k], &s) == nil && s != "" {
			return s
		}
	}
	var details []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Summary string `json:"summary"`
	}
	if json.Unmarshal(f["reasoning_details"], &details) != nil {
		return ""
	}
	var b strings.Builder
	for _, d := range details {
		b.WriteString(d.Text)
		b.WriteString(d.Summary)
	}
	return b.String()
}

// item returns the reasoning item of an answer with these fields: its
// text as a reasoning_text part, and the fields themselves; ok is false
// if there are none.
func (f chatFields) item() (outReasoning, bool) {
	if len(f) == 0 {
		return outReasoning{}, false
	}
	it := outReasoning{Type: "reasoning", Summary: []any{}, Content: []any{}, ChatFields: f}
	if t := f.text(); t != "" {
		it.Content = []any{outText{Type: "reasoning_text", Text: t}}
	}
	return it, true
}
