package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/demiurge-dev/demiurge/cas"
)

// Anthropic's Messages API (ProviderAnthropic), through
// github.com/anthropics/anthropic-sdk-go/v2 (API version 2026-10-21),
// which sends the request the adapter builds (see native.go) with the
// key, the version and the base URL, its own retries off.
//
// A transcript item becomes one or more content blocks, of the message of
// its role (consecutive items of one role make one message):
//
//	user message             user: text (image, document) blocks
//	system/developer message system: text blocks
//	assistant message        assistant: text blocks (refusal parts are not sent)
//	reasoning + "anthropic"  assistant: the thinking or redacted_thinking block, unchanged
//	reasoning, other         (not sent: another provider's reasoning)
//	function_call            assistant: tool_use {id, name, input}
//	function_call_output     user: tool_result {tool_use_id, content}
//	anthropic_block          the block it holds, unchanged
//
// The answer's blocks become Responses-style output items, in order: a
// text block an assistant message, a tool_use block a function_call, a
// thinking block a reasoning item whose reasoning_text is the thinking and
// whose "anthropic" member keeps the signature
// ({"type":"thinking","signature":…}), a redacted_thinking block a
// reasoning item with only {"type":"redacted_thinking","data":…}, any
// other block an anthropic_block item that keeps it whole. So the next
// request sends the thinking back as it came, signature and all.
//
// Prompt caching: the last tool, the system prompt, the request's last
// message and the message that ended the chat's previous request each
// end with a cache marker (four breakpoints, Anthropic's most), so that
// each request reads what the one before wrote.

// anthropicItem is the part of a transcript item a block is made from.
type anthropicItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Anthropic json.RawMessage `json:"anthropic"`
}

// Content blocks of a request, in the field order Anthropic's docs write.
type (
	aText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	aImage struct {
		Type   string  `json:"type"`
		Source aSource `json:"source"`
	}
	aSource struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
	}
	aToolUse struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	aToolResult struct {
		Type      string `json:"type"`
		ToolUseID string `json:"tool_use_id"`
		Content   any    `json:"content,omitempty"`
	}
	aThinking struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	aRedacted struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	aTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
)

// anthropicExtra is an output item's "anthropic" member: what of a block
// has no place in a Responses item.
type anthropicExtra struct {
	Type      string `json:"type"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// anthropicDialect encodes transcript items as Messages API blocks.
type anthropicDialect struct{}

func (anthropicDialect) groupOpen(role string, first bool) []byte {
	return messageOpen(role, "content", first)
}

// marks puts the chat's cache breakpoints in the messages: on the last
// message, and on the message before the last assistant message (where
// the previous request ended, so that this one reads what it wrote).
func (anthropicDialect) marks(roles []string) []int {
	if len(roles) == 0 {
		return nil
	}
	out := []int{len(roles) - 1}
	for i := len(roles) - 1; i > 0; i-- {
		if roles[i] == "assistant" {
			if i-1 != len(roles)-1 {
				out = append(out, i-1)
			}
			break
		}
	}
	return out
}

// blocks joins encoded blocks into an encoded item of role; the last
// block takes a cache marker unless noMark.
func blocks(role string, bs [][]byte, noMark bool) encoded {
	if len(bs) == 0 {
		return encoded{markAt: -1}
	}
	b := bytes.Join(bs, []byte{','})
	e := encoded{role: role, body: b, markAt: len(b) - 1}
	if noMark {
		e.markAt = -1
	}
	return e
}

func (anthropicDialect) encode(_ *nativeSession, it item) (encoded, error) {
	var ai anthropicItem
	if err := json.Unmarshal(it.raw, &ai); err != nil {
		return encoded{}, invalidf("%s: %v", it.where(), err)
	}
	switch kind := it.kind(); kind {
	case "message":
		switch ai.Role {
		case "user":
			bs, err := anthropicUserContent(ai.Content)
			if err != nil {
				return encoded{}, invalidf("%s: %v", it.where(), err)
			}
			return blocks("user", bs, false), nil
		case "system", "developer":
			text, err := chatTextParts(ai.Content)
			if err != nil {
				return encoded{}, invalidf("%s: %v", it.where(), err)
			}
			if text == "" {
				return encoded{markAt: -1}, nil
			}
			return blocks("system", [][]byte{mustMarshal(aText{Type: "text", Text: text})}, false), nil
		case "assistant":
			var bs [][]byte
			for _, t := range assistantTexts(ai.Content) {
				bs = append(bs, mustMarshal(aText{Type: "text", Text: t}))
			}
			return blocks("assistant", bs, false), nil
		default:
			return encoded{}, invalidf("%s: role %q is not user, system, developer or assistant", it.where(), ai.Role)
		}
	case "reasoning":
		if len(ai.Anthropic) == 0 || string(ai.Anthropic) == "null" {
			return encoded{markAt: -1}, nil // another provider's reasoning
		}
		var x anthropicExtra
		if err := json.Unmarshal(ai.Anthropic, &x); err != nil {
			return encoded{}, invalidf("%s: anthropic: %v", it.where(), err)
		}
		var b []byte
		switch x.Type {
		case "thinking":
			b = mustMarshal(aThinking{Type: "thinking", Thinking: reasoningText(it.raw), Signature: x.Signature})
		case "redacted_thinking":
			b = mustMarshal(aRedacted{Type: "redacted_thinking", Data: x.Data})
		default:
			return encoded{}, invalidf("%s: anthropic block type %q is not thinking or redacted_thinking", it.where(), x.Type)
		}
		e := blocks("assistant", [][]byte{b}, true) // thinking takes no cache marker
		e.thinks = true
		return e, nil
	case "function_call":
		if ai.CallID == "" || ai.Name == "" {
			return encoded{}, invalidf("%s: function_call needs call_id and name", it.where())
		}
		input := json.RawMessage(argumentsText(ai.Arguments))
		if !isJSONObject(input) {
			input = json.RawMessage("{}") // a malformed call, answered with an error
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, input); err == nil {
			input = buf.Bytes()
		}
		e := blocks("assistant", [][]byte{mustMarshal(aToolUse{Type: "tool_use", ID: toolID(ai.CallID), Name: ai.Name, Input: input})}, false)
		e.calls = true
		return e, nil
	case "function_call_output":
		if ai.CallID == "" {
			return encoded{}, invalidf("%s: function_call_output needs call_id", it.where())
		}
		r := aToolResult{Type: "tool_result", ToolUseID: toolID(ai.CallID)}
		text, err := chatTextParts(ai.Output)
		if err != nil {
			bs, err := anthropicUserContent(ai.Output)
			if err != nil {
				return encoded{}, invalidf("%s: output: %v", it.where(), err)
			}
			r.Content = json.RawMessage("[" + string(bytes.Join(bs, []byte{','})) + "]")
		} else if text != "" {
			r.Content = text
		}
		return blocks("user", [][]byte{mustMarshal(r)}, false), nil
	case "anthropic_block":
		if !isJSONObject(ai.Anthropic) {
			return encoded{}, invalidf("%s: anthropic_block holds no block", it.where())
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, ai.Anthropic); err != nil {
			return encoded{}, invalidf("%s: %v", it.where(), err)
		}
		return blocks("assistant", [][]byte{buf.Bytes()}, true), nil
	default:
		return encoded{}, invalidf("%s: item type %q cannot be sent to provider %s", it.where(), kind, ProviderAnthropic)
	}
}

// toolID makes a call id one Anthropic takes (^[a-zA-Z0-9_-]+$): a call
// and its result name it the same way.
func toolID(id string) string {
	if s := idSafe(id); s != "" {
		return s
	}
	return "call"
}

// isJSONObject reports whether b is a JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// mustMarshal encodes a block of ours, without HTML escaping.
func mustMarshal(v any) []byte {
	b, err := marshalNoEscape(v)
	if err != nil {
		panic(fmt.Sprintf("llm: encode %T: %v", v, err)) // programmer error: the types are ours
	}
	return b
}

// assistantTexts returns the non-empty texts of an assistant message's
// content (a string, or output_text and text parts; refusal parts are
// left out).
func assistantTexts(content json.RawMessage) []string {
	c := bytes.TrimSpace(content)
	if len(c) > 0 && c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) == nil && s != "" {
			return []string{s}
		}
		return nil
	}
	var ps []chatPart
	_ = json.Unmarshal(c, &ps)
	var out []string
	for _, p := range ps {
		if (p.Type == "output_text" || p.Type == "text" || p.Type == "input_text") && p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

// anthropicUserContent converts a user message's content (a string or
// parts) to blocks: text, images (data: URLs as base64, others by URL),
// PDF and text files.
func anthropicUserContent(content json.RawMessage) ([][]byte, error) {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || c[0] != '[' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, fmt.Errorf("content must be text or a list of parts")
		}
		if s == "" {
			return nil, nil
		}
		return [][]byte{mustMarshal(aText{Type: "text", Text: s})}, nil
	}
	var ps []chatPart
	if err := json.Unmarshal(c, &ps); err != nil {
		return nil, fmt.Errorf("content parts: %v", err)
	}
	var out [][]byte
	for i, p := range ps {
		switch p.Type {
		case "input_text", "output_text", "text":
			if p.Text != "" {
				out = append(out, mustMarshal(aText{Type: "text", Text: p.Text}))
			}
		case "input_image":
			if mt, data, ok := dataURL(p.ImageURL); ok {
				out = append(out, mustMarshal(aImage{Type: "image", Source: aSource{Type: "base64", MediaType: mt, Data: data}}))
			} else if strings.HasPrefix(p.ImageURL, "https://") || strings.HasPrefix(p.ImageURL, "http://") {
				out = append(out, mustMarshal(aImage{Type: "image", Source: aSource{Type: "url", URL: p.ImageURL}}))
			} else {
				return nil, fmt.Errorf("content[%d]: an input_image needs an image_url (a data: or http(s) URL) for provider %s", i, ProviderAnthropic)
			}
		case "input_file":
			mt, data, ok := dataURL(p.FileData)
			if !ok {
				return nil, fmt.Errorf("content[%d]: an input_file needs file_data as a data: URL for provider %s", i, ProviderAnthropic)
			}
			out = append(out, mustMarshal(aImage{Type: "document", Source: aSource{Type: "base64", MediaType: mt, Data: data}}))
		default:
			return nil, fmt.Errorf("content[%d]: part type %q cannot be sent to provider %s", i, p.Type, ProviderAnthropic)
		}
	}
	return out, nil
}

// dataURL splits "data:MIME;base64,DATA".
func dataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	head, data, found := strings.Cut(rest, ",")
	mime, isB64 := strings.CutSuffix(head, ";base64")
	return mime, data, found && isB64 && mime != ""
}

// anthropicAdaptive reports whether a Claude model thinks adaptively
// (thinking {"type":"adaptive"} with an effort, Claude Opus 4.6 and
// later) rather than with a budget of tokens (the models before).
func anthropicAdaptive(model string) bool {
	for _, p := range []string{"claude-3", "claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1",
		"claude-opus-4-0", "claude-sonnet-4-0", "claude-opus-4-2025", "claude-sonnet-4-2025"} {
		if strings.HasPrefix(model, p) {
			return false
		}
	}
	return model != "claude-opus-4" && model != "claude-sonnet-4"
}

// thinkingBudgets are the budgets of extended thinking by effort.
var thinkingBudgets = map[string]int64{"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768, "max": 65536}

// anthropicEfforts are the efforts output_config takes.
var anthropicEfforts = []string{"low", "medium", "high", "xhigh", "max"}

// anthropicHead is the start of a Messages request, before its messages.
type anthropicHead struct {
	Model        string                              `json:"model"`
	MaxTokens    int64                               `json:"max_tokens"`
	Stream       bool                                `json:"stream,omitempty"`
	System       []json.RawMessage                   `json:"system,omitempty"`
	Tools        json.RawMessage                     `json:"tools,omitempty"`
	ToolChoice   *anthropic.ToolChoiceUnionParam     `json:"tool_choice,omitempty"`
	Thinking     *anthropic.ThinkingConfigParamUnion `json:"thinking,omitempty"`
	OutputConfig *anthropic.OutputConfigParam        `json:"output_config,omitempty"`
}

// prepareAnthropic builds the call's Messages request.
func (g *Generator) prepareAnthropic(ctx context.Context, blobs Blobs, c *call, p Params, refs []cas.Ref, tools []tool) error {
	maxTokens, err := tokenLimit(p.MaxTokens, c.model)
	if err != nil {
		return err
	}
	if p.Temperature != nil {
		// The API version the SDK speaks (2026-10-21) has no sampling
		// parameters.
		return invalidf("temperature %s: provider %s (Messages API version 2026-10-21) takes no temperature; drop it", *p.Temperature, ProviderAnthropic)
	}
	if maxTokens == 0 {
		maxTokens = 4096 // the API takes no request without one
	}
	h := anthropicHead{Model: p.Model, MaxTokens: maxTokens, Stream: c.onDelta != nil}
	if p.Instructions != nil && *p.Instructions != "" {
		h.System = []json.RawMessage{json.RawMessage(mustMarshal(aText{Type: "text", Text: *p.Instructions}))}
		h.System[0] = splice(h.System[0])
	}
	if len(tools) > 0 {
		var ts []json.RawMessage
		for _, t := range tools {
			if t.typ != "function" {
				return invalidf("tools: tool type %q is not supported by provider %s (only function tools are)", t.typ, ProviderAnthropic)
			}
			ft, err := t.function()
			if err != nil {
				return invalidf("tools: %v", err)
			}
			schema, err := marshalNoEscape(ft.Parameters)
			if err != nil || ft.Parameters == nil {
				schema = []byte(`{"type":"object","properties":{}}`)
			}
			at := aTool{Name: ft.Name, InputSchema: schema}
			if ft.Description != nil {
				at.Description = *ft.Description
			}
			ts = append(ts, mustMarshal(at))
		}
		ts[len(ts)-1] = splice(ts[len(ts)-1])
		h.Tools = json.RawMessage("[" + string(bytes.Join(asBytes(ts), []byte{','})) + "]")
	}
	forced := false
	if tc := p.ToolChoice; tc != nil {
		if err := checkToolChoice(*tc, tools); err != nil {
			return err
		}
		var u anthropic.ToolChoiceUnionParam
		switch tc.Kind {
		case ToolChoiceAuto:
			u.OfAuto = &anthropic.ToolChoiceAutoParam{}
		case ToolChoiceNone:
			u.OfNone = &anthropic.ToolChoiceNoneParam{}
		case ToolChoiceRequired:
			u.OfAny = &anthropic.ToolChoiceAnyParam{}
			forced = true
		case ToolChoiceTool:
			u.OfTool = &anthropic.ToolChoiceToolParam{Name: tc.Name}
			forced = true
		}
		h.ToolChoice = &u
	}
	if p.ResponseFormat != nil {
		js, _, err := checkTextFormat(*p.ResponseFormat)
		if err != nil {
			return err
		}
		var schema map[string]any
		if err := json.Unmarshal([]byte(js.SchemaJSON), &schema); err != nil {
			return invalidf("response_format JsonSchema %q: %v", js.Name, err)
		}
		h.OutputConfig = &anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: schema}}
	}
	effort := ""
	if p.ReasoningEffort != nil && c.model.ReasoningEffort {
		effort = *p.ReasoningEffort
	}
	head := func(ns *nativeSession) ([]byte, error) {
		h := h
		c.beta = ""
		// The API refuses thinking with a forced tool choice.
		if effort != "" && !forced {
			if anthropicAdaptive(p.Model) {
				e := effort
				if e == "minimal" {
					e = "low"
				}
				if !slices.Contains(anthropicEfforts, e) {
					return nil, invalidf("reasoning effort %q: provider %s takes %s", effort, ProviderAnthropic, strings.Join(anthropicEfforts, ", "))
				}
				h.Thinking = &anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
				if h.OutputConfig == nil {
					h.OutputConfig = &anthropic.OutputConfigParam{}
				} else {
					oc := *h.OutputConfig
					h.OutputConfig = &oc
				}
				h.OutputConfig.Effort = anthropic.OutputConfigEffort(e)
			} else if budget, ok := thinkingBudgets[effort]; !ok {
				return nil, invalidf("reasoning effort %q: want one of minimal, low, medium, high, xhigh, max", effort)
			} else if budget = min(budget, maxTokens-1); budget >= 1024 && lastTurnThinks(ns) {
				h.Thinking = &anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: budget}}
				c.beta = "interleaved-thinking-2025-05-14"
			}
		}
		return headOpen(h, "messages")
	}
	c.native, c.session, err = g.buildNative(ctx, blobs, anthropicDialect{}, ProviderAnthropic, refs, c.apiKey, head)
	return err
}

// lastTurnThinks reports whether thinking with a budget may be enabled
// for the request: the API refuses it when the last assistant message,
// whose tool calls the request answers, does not begin with a thinking
// block (as when another model, or a model without thinking, made it).
func lastTurnThinks(ns *nativeSession) bool {
	for k := len(ns.groups) - 1; k >= 0; k-- {
		grp := ns.groups[k]
		if ns.enc[grp.from].role == "user" || ns.enc[grp.from].role == "system" {
			continue
		}
		calls, first := false, true
		thinks := false
		for i := grp.from; i < grp.to; i++ {
			e := ns.enc[i]
			if e.role == "" {
				continue
			}
			if first {
				thinks, first = e.thinks, false
			}
			calls = calls || e.calls
		}
		return thinks || !calls
	}
	return true
}

// splice adds a cache marker to the end of an encoded block.
func splice(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(cacheMarker))
	out = append(out, b[:len(b)-1]...)
	out = append(out, cacheMarker...)
	return append(out, '}')
}

func asBytes(rs []json.RawMessage) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

// attemptAnthropic sends the request once, through the SDK.
func (g *Generator) attemptAnthropic(ctx, actx context.Context, c *call) (exchange, parsed, error) {
	cp := &capture{stream: c.onDelta != nil, sent: c.native}
	opts := []aoption.RequestOption{aoption.WithMiddleware(cp.middleware)}
	if c.apiKey != "" {
		opts = append(opts, aoption.WithAPIKey(c.apiKey))
	}
	if c.beta != "" {
		opts = append(opts, aoption.WithHeader("anthropic-beta", c.beta))
	}
	var resp *http.Response
	err := g.anthropic.Post(actx, "v1/messages", c.native.reader(), &resp, opts...)
	ex := exchange{response: cp.body}
	if ctx.Err() != nil {
		return ex, parsed{}, ctx.Err()
	}
	if cp.status == 0 || cp.status >= 400 || cp.readErr != nil || cp.tooLarge || (err != nil && !cp.stream) {
		return ex, parsed{}, g.transportError(c, actx, cp, err)
	}
	if !cp.stream {
		res, err := c.parse(cp.body)
		if err != nil {
			return ex, parsed{}, g.parseFailure(c, cp, err)
		}
		return ex, res, nil
	}
	acc := &anthropicStream{texted: c.texted, apart: c.texted}
	return g.readStream(ctx, actx, c, cp, resp, err, acc)
}

// streamAccumulator folds a native provider's stream events into the
// response object a call without a stream would have returned.
type streamAccumulator interface {
	// add folds one event in and returns the answer's text it carries.
	add(event string, data []byte) (string, error)
	// done reports whether the stream reached its end.
	done() bool
	// assemble returns the response object.
	assemble() ([]byte, error)
	// endName names the stream's end, for errors.
	endName() string
}

// readStream reads a native provider's stream to its end.
func (g *Generator) readStream(ctx, actx context.Context, c *call, cp *capture, resp *http.Response, err error, acc streamAccumulator) (exchange, parsed, error) {
	var failed error
	events := 0
	if err == nil && resp != nil {
		dec := ssestream.NewDecoder(resp)
		for failed == nil && !acc.done() && dec.Next() {
			ev := dec.Event()
			if len(bytes.TrimSpace(ev.Data)) == 0 {
				continue
			}
			events++
			delta, aerr := acc.add(ev.Type, ev.Data)
			if aerr != nil {
				failed = aerr
				break
			}
			c.deliver(delta)
		}
		err = dec.Err()
		dec.Close()
	}
	ex := exchange{}
	if cp.tee != nil {
		ex.response = cp.tee.Bytes()
	} else {
		ex.response = cp.body
	}
	if ctx.Err() != nil {
		return ex, parsed{}, ctx.Err()
	}
	if failed != nil {
		return ex, parsed{}, g.parseFailure(c, cp, failed)
	}
	if acc.done() {
		final, aerr := acc.assemble()
		if aerr != nil {
			return ex, parsed{}, g.parseFailure(c, cp, aerr)
		}
		ex.response = final
		res, perr := c.parse(final)
		if perr != nil {
			return ex, parsed{}, g.parseFailure(c, cp, perr)
		}
		return ex, res, nil
	}
	if cp.status == 0 || cp.status >= 400 || err != nil {
		return ex, parsed{}, g.transportError(c, actx, cp, err)
	}
	if events == 0 && contentTypeJSON(cp.header) && cp.tee != nil {
		// The server ignored "stream": true and sent one JSON body.
		body := cp.tee.Bytes()
		res, perr := c.parse(body)
		if perr != nil {
			return ex, parsed{}, g.parseFailure(c, cp, perr)
		}
		c.deliver(res.text)
		ex.response = body
		return ex, res, nil
	}
	return ex, parsed{}, &ProviderError{
		Provider: c.provider, Kind: KindStreamCut, Status: cp.status, RequestID: requestIDOf(cp.header),
		Message:   fmt.Sprintf("the stream ended after %d events without %s", events, acc.endName()),
		Retryable: !c.delivered,
		Hint:      "the connection or the server broke off; try again",
	}
}

// rawAnthropic is the part of a Messages API response that is read.
type rawAnthropic struct {
	ID           *string            `json:"id"`
	Type         string             `json:"type"`
	Model        string             `json:"model"`
	Content      *[]json.RawMessage `json:"content"`
	StopReason   *string            `json:"stop_reason"`
	StopSequence *string            `json:"stop_sequence"`
	StopDetails  *struct {
		Type        string `json:"type"`
		Category    string `json:"category"`
		Explanation string `json:"explanation"`
	} `json:"stop_details"`
	Usage *struct {
		InputTokens              uint64 `json:"input_tokens"`
		OutputTokens             uint64 `json:"output_tokens"`
		CacheCreationInputTokens uint64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     uint64 `json:"cache_read_input_tokens"`
		OutputTokensDetails      *struct {
			ThinkingTokens uint64 `json:"thinking_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// anthropicBlock is the part of a response's content block that is read.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// Output items of a native answer beyond those of chat.go.
type (
	outNativeReasoning struct {
		Type      string          `json:"type"`
		Summary   []any           `json:"summary"`
		Content   []any           `json:"content,omitempty"`
		Anthropic *anthropicExtra `json:"anthropic,omitempty"`
		Gemini    *geminiExtra    `json:"gemini,omitempty"`
	}
	outAnthropicBlock struct {
		Type      string          `json:"type"`
		Anthropic json.RawMessage `json:"anthropic"`
	}
	// outSummary is a reasoning item's summary_text or reasoning_text
	// part.
	outSummary struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
)

// parseAnthropicBody reads a Messages API response and converts its
// content to a Responses-style output array (see the top of this file).
// It never panics; anything that is not a usable reply is a *parseError.
func parseAnthropicBody(body []byte) (parsed, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return parsed{}, badResponse("body is not a JSON object: %s", clipText(string(body), 120))
	}
	if !utf8.Valid(trimmed) {
		return parsed{}, badResponse("body is not valid UTF-8")
	}
	var r rawAnthropic
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return parsed{}, badResponse("body is not a Messages API message: %v", err)
	}
	if r.Type == "error" || (r.Content == nil && len(r.Error) > 0 && string(r.Error) != "null") {
		return parsed{}, nativeStreamError(trimmed)
	}
	if r.Content == nil {
		return parsed{}, badResponse("message has no \"content\"")
	}
	var out parsed
	if r.ID != nil {
		out.id = *r.ID
	}
	out.model = r.Model
	stop := ""
	if r.StopReason != nil {
		stop = *r.StopReason
	}
	cut := stop == "max_tokens" || stop == "model_context_window_exceeded"
	status := "completed"
	if cut {
		status = "incomplete"
	}
	var output []any
	var msg *outMessage // the message item text blocks go to, while they follow one another
	for i, raw := range *r.Content {
		var b anthropicBlock
		if len(raw) == 0 || raw[0] != '{' {
			return parsed{}, badResponse("content[%d] is not an object", i)
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return parsed{}, badResponse("content[%d]: %v", i, err)
		}
		if b.Type != "text" {
			msg = nil
		}
		switch b.Type {
		case "text":
			if msg == nil {
				msg = &outMessage{Type: "message", Role: "assistant", Status: status}
				output = append(output, msg)
			}
			msg.Content = append(msg.Content, outText{Type: "output_text", Text: b.Text, Annotations: []any{}})
		case "thinking":
			rs := outNativeReasoning{Type: "reasoning", Summary: []any{}, Anthropic: &anthropicExtra{Type: "thinking", Signature: b.Signature}}
			if b.Thinking != "" {
				rs.Content = []any{outSummary{Type: "reasoning_text", Text: b.Thinking}}
			}
			output = append(output, rs)
		case "redacted_thinking":
			output = append(output, outNativeReasoning{Type: "reasoning", Summary: []any{}, Anthropic: &anthropicExtra{Type: "redacted_thinking", Data: b.Data}})
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return parsed{}, badResponse("content[%d] tool_use has no id or name", i)
			}
			args := "{}"
			if len(b.Input) > 0 && string(b.Input) != "null" {
				var buf bytes.Buffer
				if err := json.Compact(&buf, b.Input); err != nil {
					return parsed{}, badResponse("content[%d] tool_use input: %v", i, err)
				}
				args = buf.String()
			}
			output = append(output, outCall{Type: "function_call", CallID: b.ID, Name: b.Name, Arguments: args, Status: status})
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, raw); err != nil {
				return parsed{}, badResponse("content[%d]: %v", i, err)
			}
			output = append(output, outAnthropicBlock{Type: "anthropic_block", Anthropic: buf.Bytes()})
		}
	}
	refused := stop == "refusal"
	if refused {
		why := "the model declined to answer (refusal)"
		if d := r.StopDetails; d != nil && d.Explanation != "" {
			why = d.Explanation
		}
		output = append(output, outMessage{Type: "message", Role: "assistant", Status: status,
			Content: []any{outRefusal{Type: "refusal", Refusal: why}}})
	}
	if output == nil {
		output = []any{}
	}
	var err error
	out.output, err = marshalNoEscape(output)
	if err != nil {
		return parsed{}, badResponse("convert reply: %v", err)
	}
	if err := parseOutputItems(out.output, &out); err != nil {
		return parsed{}, err
	}
	if u := r.Usage; u != nil {
		out.usageKnown = true
		out.usage = TokenUsage{
			Input:      u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
			Output:     u.OutputTokens,
			CacheRead:  u.CacheReadInputTokens,
			CacheWrite: u.CacheCreationInputTokens,
		}
		if d := u.OutputTokensDetails; d != nil {
			out.usage.Reasoning = d.ThinkingTokens
		}
	}
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		out.finish = "length"
	case "pause_turn":
		// The server paused a long turn of its own tools: the reply is
		// not complete.
		out.finish = finishPauseTurn
	default:
		out.finish = finishReason("", refused, len(out.calls) > 0)
	}
	return out, nil
}

// anthropicStream accumulates a Messages API stream into the message a
// call without a stream would have returned.
type anthropicStream struct {
	message map[string]json.RawMessage // message_start's message
	blocks  []*streamBlock
	delta   map[string]json.RawMessage // message_delta's delta (stop_reason…)
	usage   map[string]json.RawMessage // the usage, updated by message_delta
	stopped bool
	// texted: text was delivered; apart: a block of another kind started
	// since. The next text starts a line, as its message's text is a line
	// apart in the answer's text (parseOutputItems).
	texted, apart bool
}

// streamBlock is a content block being streamed.
type streamBlock struct {
	index int64
	start map[string]json.RawMessage // content_block_start's block
	text  strings.Builder            // text, thinking or partial JSON
	sig   strings.Builder
}

// anthropicEvent is the part of a stream event that is read.
type anthropicEvent struct {
	Type         string                     `json:"type"`
	Message      map[string]json.RawMessage `json:"message"`
	Index        int64                      `json:"index"`
	ContentBlock map[string]json.RawMessage `json:"content_block"`
	Delta        map[string]json.RawMessage `json:"delta"`
	Usage        map[string]json.RawMessage `json:"usage"`
}

func (s *anthropicStream) endName() string { return "message_stop" }

func (s *anthropicStream) done() bool { return s.stopped }

func (s *anthropicStream) block(index int64) *streamBlock {
	for _, b := range s.blocks {
		if b.index == index {
			return b
		}
	}
	return nil
}

func str(raw json.RawMessage) string {
	var v string
	_ = json.Unmarshal(raw, &v)
	return v
}

func (s *anthropicStream) add(event string, data []byte) (string, error) {
	var ev anthropicEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return "", badResponse("stream event %q is not JSON: %v", event, err)
	}
	if ev.Type == "" {
		ev.Type = event
	}
	switch ev.Type {
	case "message_start":
		if ev.Message == nil {
			return "", badResponse("message_start has no message")
		}
		s.message = ev.Message
		_ = json.Unmarshal(ev.Message["usage"], &s.usage)
	case "content_block_start":
		if ev.ContentBlock == nil {
			return "", badResponse("content_block_start %d has no content_block", ev.Index)
		}
		s.blocks = append(s.blocks, &streamBlock{index: ev.Index, start: ev.ContentBlock})
		if str(ev.ContentBlock["type"]) != "text" {
			s.apart = s.texted
		}
	case "content_block_delta":
		b := s.block(ev.Index)
		if b == nil {
			return "", badResponse("content_block_delta for block %d, which did not start", ev.Index)
		}
		switch str(ev.Delta["type"]) {
		case "text_delta":
			t := str(ev.Delta["text"])
			b.text.WriteString(t)
			if t != "" {
				if s.apart {
					t = "\n" + t
				}
				s.texted, s.apart = true, false
			}
			return t, nil
		case "thinking_delta":
			b.text.WriteString(str(ev.Delta["thinking"]))
		case "signature_delta":
			b.sig.WriteString(str(ev.Delta["signature"]))
		case "input_json_delta":
			b.text.WriteString(str(ev.Delta["partial_json"]))
		}
	case "message_delta":
		s.delta = ev.Delta
		if s.usage == nil {
			s.usage = map[string]json.RawMessage{}
		}
		for k, v := range ev.Usage {
			if string(v) != "null" {
				s.usage[k] = v
			}
		}
	case "message_stop":
		if s.message == nil {
			return "", badResponse("message_stop before message_start")
		}
		s.stopped = true
	case "error":
		return "", nativeStreamError(data)
	}
	return "", nil
}

func (s *anthropicStream) assemble() ([]byte, error) {
	msg := make(map[string]json.RawMessage, len(s.message)+2)
	for k, v := range s.message {
		msg[k] = v
	}
	blocks := slices.Clone(s.blocks)
	slices.SortStableFunc(blocks, func(a, b *streamBlock) int { return int(a.index - b.index) })
	content := make([]json.RawMessage, 0, len(blocks))
	for _, b := range blocks {
		out := make(map[string]json.RawMessage, len(b.start))
		for k, v := range b.start {
			out[k] = v
		}
		switch str(b.start["type"]) {
		case "text":
			out["text"] = mustMarshal(str(b.start["text"]) + b.text.String())
		case "thinking":
			out["thinking"] = mustMarshal(str(b.start["thinking"]) + b.text.String())
			out["signature"] = mustMarshal(str(b.start["signature"]) + b.sig.String())
		case "tool_use", "server_tool_use":
			if b.text.Len() > 0 {
				in := []byte(b.text.String())
				if !json.Valid(in) {
					return nil, badResponse("content block %d: its input is not JSON: %s", b.index, clipText(string(in), 80))
				}
				out["input"] = in
			}
		}
		enc, err := marshalNoEscape(out)
		if err != nil {
			return nil, err
		}
		content = append(content, enc)
	}
	msg["content"] = mustMarshal(content)
	for k, v := range s.delta {
		msg[k] = v
	}
	if s.usage != nil {
		msg["usage"] = mustMarshal(s.usage)
	}
	return marshalNoEscape(msg)
}
