package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// buildResponsesParams makes the request of the Responses API for model
// m, all but its input (see spliceResponses), sending only what m takes (see Model): a temperature and a reasoning
// effort only if it takes them, max_output_tokens at most its limit, and,
// for a stateless call, include:["reasoning.encrypted_content"] only if it
// reasons with encrypted content.
//
// Without previous_response_id the whole transcript is sent. With it, only
// the items after the transcript's last model output (assistant message,
// reasoning, tool call) are sent: the provider already holds the rest.
// Reasoning items of the transcript are sent back only where the provider
// can take them: to a stateless call, those with encrypted content if m
// reasons with it, and those with their text if m takes it back
// (Model.ReasoningEcho); to a stored one, those with an id.
func buildResponsesParams(p Params, items []item, tools []tool, store bool, m Model) (responses.ResponseNewParams, error) {
	// items are looked at only to check previous_response_id.
	var rp responses.ResponseNewParams
	rp.Model = shared.ResponsesModel(p.Model)
	if p.Instructions != nil {
		rp.Instructions = openai.String(*p.Instructions)
	}
	if n, err := tokenLimit(p.MaxTokens, m); err != nil {
		return rp, err
	} else if n > 0 {
		rp.MaxOutputTokens = openai.Int(n)
	}
	if p.Temperature != nil {
		t, err := parseTemperature(*p.Temperature)
		if err != nil {
			return rp, err
		}
		if m.Temperature {
			rp.Temperature = openai.Float(t)
		}
	}
	if p.ReasoningEffort != nil && *p.ReasoningEffort != "" && m.ReasoningEffort {
		rp.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(*p.ReasoningEffort)}
	}

	if p.PreviousResponseID != nil && *p.PreviousResponseID != "" {
		rp.PreviousResponseID = openai.String(*p.PreviousResponseID)
		store = true // a chain only continues from stored responses
		if len(itemsAfterLastOutput(items)) == 0 {
			return rp, invalidf("previous_response_id %q is set but the transcript has no item after the last model output: append the new user message or tool outputs", *p.PreviousResponseID)
		}
	}
	rp.Store = openai.Bool(store)
	if !store && m.EncryptedReasoning {
		rp.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}

	for _, t := range tools {
		if t.typ != "function" {
			rp.Tools = append(rp.Tools, param.Override[responses.ToolUnionParam](t.raw))
			continue
		}
		ft, err := t.function()
		if err != nil {
			return rp, invalidf("tools: %v", err)
		}
		if t.resp != nil {
			rp.Tools = append(rp.Tools, param.Override[responses.ToolUnionParam](t.resp))
			continue
		}
		rp.Tools = append(rp.Tools, responsesFunctionTool(ft))
	}

	if p.ToolChoice != nil {
		if err := checkToolChoice(*p.ToolChoice, tools); err != nil {
			return rp, err
		}
		switch p.ToolChoice.Kind {
		case ToolChoiceAuto:
			rp.ToolChoice.OfToolChoiceMode = openai.Opt(responses.ToolChoiceOptionsAuto)
		case ToolChoiceNone:
			rp.ToolChoice.OfToolChoiceMode = openai.Opt(responses.ToolChoiceOptionsNone)
		case ToolChoiceRequired:
			rp.ToolChoice.OfToolChoiceMode = openai.Opt(responses.ToolChoiceOptionsRequired)
		case ToolChoiceTool:
			rp.ToolChoice.OfFunctionTool = &responses.ToolChoiceFunctionParam{Name: p.ToolChoice.Name}
		}
	}

	if p.ResponseFormat != nil {
		js, schema, err := checkTextFormat(*p.ResponseFormat)
		if err != nil {
			return rp, err
		}
		rp.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
				Name:   js.Name,
				Schema: schema,
				Strict: openai.Bool(js.Strict),
			},
		}}
	}
	return rp, nil
}

// responsesFunctionTool is the Responses request's form of a function
// tool.
func responsesFunctionTool(ft functionTool) responses.ToolUnionParam {
	fp := responses.FunctionToolParam{
		Name:       ft.Name,
		Parameters: ft.Parameters,
		Strict:     openai.Bool(ft.Strict),
	}
	if ft.Description != nil {
		fp.Description = openai.String(*ft.Description)
	}
	if ft.Extra != nil {
		fp.SetExtraFields(ft.Extra)
	}
	return responses.ToolUnionParam{OfFunction: &fp}
}

// tokenLimit is the reply's token cap to send: the setting, at most the
// model's limit; 0 sends none.
func tokenLimit(maxTokens uint64, m Model) (int64, error) {
	if maxTokens > math.MaxInt64 {
		return 0, invalidf("max_tokens %d is too large", maxTokens)
	}
	if m.MaxOutputTokens > 0 && maxTokens > m.MaxOutputTokens {
		maxTokens = m.MaxOutputTokens
	}
	return int64(maxTokens), nil
}

// reasoningHead is the part of a reasoning item that says whether a
// Responses provider can take it back.
type reasoningHead struct {
	ID               string          `json:"id"`
	EncryptedContent json.RawMessage `json:"encrypted_content"`
	Content          json.RawMessage `json:"content"`
}

// keepReasoning reports whether a Responses call can take the item back
// (see buildResponsesParams): any item but a reasoning item; a reasoning
// item, with an id if the call is stored, with encrypted content if m
// reasons with it, with its text if m takes it back.
func keepReasoning(it item, store bool, m Model) bool {
	if it.kind() != "reasoning" {
		return true
	}
	var h reasoningHead
	if json.Unmarshal(it.raw, &h) != nil {
		return false
	}
	switch {
	case store:
		return h.ID != ""
	case m.EncryptedReasoning && len(h.EncryptedContent) > 0 && string(h.EncryptedContent) != "null":
		return true
	}
	// A model that takes its reasoning text back gets the items that
	// carry it.
	return m.ReasoningEcho != "" && m.ReasoningEcho != EchoNone && len(h.Content) > 2 && string(h.Content) != "null"
}

// itemsAfterLastOutput returns the items after the last model output item,
// or all of them if there is none.
func itemsAfterLastOutput(items []item) []item {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].isModelOutput() {
			return items[i+1:]
		}
	}
	return items
}

// parseTemperature reads a dec128 temperature.
func parseTemperature(s string) (float64, error) {
	t, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(t) || t < 0 || t > 2 {
		return 0, invalidf("temperature %q is not a decimal between 0 and 2 (such as \"0.2\")", s)
	}
	return t, nil
}

// checkToolChoice checks c against the tools sent.
func checkToolChoice(c ToolChoice, tools []tool) error {
	if err := c.Validate(); err != nil {
		return invalidf("%v", err)
	}
	switch c.Kind {
	case ToolChoiceRequired:
		if len(tools) == 0 {
			return invalidf("tool_choice Required needs tools: set tools_ref")
		}
	case ToolChoiceTool:
		var names []string
		for _, t := range tools {
			if t.name == c.Name {
				return nil
			}
			if t.name != "" {
				names = append(names, t.name)
			}
		}
		if len(names) == 0 {
			return invalidf("tool_choice Tool{name: %q} needs tools: set tools_ref", c.Name)
		}
		return invalidf("tool_choice Tool{name: %q} names no function of tools_ref (functions: %s)", c.Name, strings.Join(names, ", "))
	}
	return nil
}

// checkTextFormat checks a response format and splits its schema into
// top-level members.
func checkTextFormat(f TextFormat) (JSONSchemaFormat, map[string]any, error) {
	if f.JSONSchema == nil {
		return JSONSchemaFormat{}, nil, invalidf("response_format has no JsonSchema arm")
	}
	js := *f.JSONSchema
	if js.Name == "" {
		return js, nil, invalidf("response_format JsonSchema needs a name")
	}
	schema, err := rawObject([]byte(js.SchemaJSON))
	if err != nil || !json.Valid([]byte(js.SchemaJSON)) {
		return js, nil, invalidf("response_format JsonSchema %q: schema_json is not a JSON object", js.Name)
	}
	return js, schema, nil
}

// parsed is what a response says, in the provider-neutral form.
type parsed struct {
	id, model, finish string
	usage             TokenUsage
	usageKnown        bool // the provider reported usage
	// billed, if set, is the usage the answer is priced at, when it is
	// not usage (a continued pause_turn: each request's, summed).
	billed    *TokenUsage
	cost      uint64 // the cost the provider reported, in micro-USD, if costKnown
	costField string // the field it was read from
	costKnown bool
	refused   bool   // a message has a refusal part
	output    []byte // the Responses-style output array
	items     []OutputItem
	calls     []ToolCall
	text      string
}

// parseError is a response that is not usable: malformed (KindBadResponse)
// or reporting its own failure (KindFailed).
type parseError struct {
	kind      ErrorKind
	code, msg string
	retryable bool
}

func (e *parseError) Error() string { return e.msg }

func badResponse(format string, args ...any) *parseError {
	return &parseError{kind: KindBadResponse, msg: fmt.Sprintf(format, args...)}
}

// rawResponse is the part of a Responses API response object that is read.
type rawResponse struct {
	ID     *string `json:"id"`
	Model  string  `json:"model"`
	Status string  `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output json.RawMessage `json:"output"`
	Usage  *struct {
		InputTokens        uint64 `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens uint64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        uint64 `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens uint64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		// Provider-reported costs (OpenRouter, xAI), as on Chat
		// Completions.
		Cost           json.Number `json:"cost"`
		CostInUSDTicks json.Number `json:"cost_in_usd_ticks"`
	} `json:"usage"`
}

// parseResponsesBody reads a Responses API response object. It never
// panics; anything that is not a usable response is a *parseError.
func parseResponsesBody(body []byte) (parsed, error) {
	var r rawResponse
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return parsed{}, badResponse("body is not a JSON object: %s", clipText(string(body), 120))
	}
	if !utf8.Valid(trimmed) {
		return parsed{}, badResponse("body is not valid UTF-8")
	}
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return parsed{}, badResponse("body is not a Responses API response object: %v", err)
	}
	var out parsed
	if r.ID != nil {
		out.id = *r.ID
	}
	out.model = r.Model
	switch r.Status {
	case "failed":
		pe := &parseError{kind: KindFailed, msg: "the provider reported the response as failed"}
		if r.Error != nil {
			pe.code, pe.msg = r.Error.Code, r.Error.Message
			pe.retryable = r.Error.Code == "server_error" || r.Error.Code == "rate_limit_exceeded"
		}
		return parsed{}, pe
	case "", "completed", "incomplete":
	case "cancelled":
		return parsed{}, &parseError{kind: KindFailed, code: "cancelled", msg: "the response was cancelled"}
	default:
		return parsed{}, badResponse("response status %q is not final (background responses are not supported)", r.Status)
	}
	if len(r.Output) == 0 || r.Output[0] != '[' {
		return parsed{}, badResponse("response has no \"output\" array")
	}
	out.output = r.Output
	if err := parseOutputItems(r.Output, &out); err != nil {
		return parsed{}, err
	}
	if r.Usage != nil {
		out.usageKnown = true
		out.usage = TokenUsage{
			Input:     r.Usage.InputTokens,
			Output:    r.Usage.OutputTokens,
			CacheRead: r.Usage.InputTokensDetails.CachedTokens,
			Reasoning: r.Usage.OutputTokensDetails.ReasoningTokens,
		}
		cu := chatUsage{Cost: r.Usage.Cost, CostInUSDTicks: r.Usage.CostInUSDTicks}
		out.cost, out.costField, out.costKnown = cu.cost()
	}
	reason := ""
	if r.Status == "incomplete" {
		reason = "incomplete"
		if r.IncompleteDetails != nil && r.IncompleteDetails.Reason != "" {
			reason = r.IncompleteDetails.Reason
		}
		if reason == "max_output_tokens" {
			reason = "length"
		}
		if reason != "length" && reason != "content_filter" {
			// An incomplete reply cuts what it holds, as a length stop does.
			out.finish = "incomplete: " + reason
			if reason == "incomplete" {
				out.finish = "incomplete"
			}
			return out, nil
		}
	}
	out.finish = finishReason(reason, out.refused, len(out.calls) > 0)
	return out, nil
}

// outItem is the part of a Responses output item that is read.
type outItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Summary   json.RawMessage `json:"summary"`
}

// contentPart is one part of a message's content.
type contentPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

// parseOutputItems fills out.items, out.calls and out.text from an output
// array.
func parseOutputItems(output []byte, out *parsed) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(output, &raws); err != nil {
		return badResponse("\"output\" is not an array of items: %v", err)
	}
	out.items = make([]OutputItem, 0, len(raws))
	var text strings.Builder
	apart := false // an item other than a message came since the text written
	for i, raw := range raws {
		var it outItem
		if len(raw) == 0 || raw[0] != '{' {
			return badResponse("output[%d] is not an object", i)
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return badResponse("output[%d]: %v", i, err)
		}
		if it.Type != "message" {
			apart = true
		}
		switch it.Type {
		case "message":
			msg, err := messageText(it.Content)
			if err != nil {
				return badResponse("output[%d] message: %v", i, err)
			}
			role := it.Role
			if role == "" {
				role = "assistant"
			}
			refusal := hasRefusal(it.Content)
			if refusal {
				out.refused = true
			}
			if text.Len() > 0 && msg != "" && (apart || refusal) {
				// Texts apart are lines apart (as chat.go joins a
				// message's text parts): the text before and after a
				// tool call, reasoning or a server tool's blocks, and the
				// answer so far and the refusal a filter or the model
				// added. Messages that follow one another are pieces of
				// one text (a stream's, Gemini's signed parts).
				text.WriteByte('\n')
			}
			if msg != "" {
				apart = false
			}
			text.WriteString(msg)
			out.items = append(out.items, OutputItem{Message: &MessageItem{Role: role, Text: msg}})
		case "function_call":
			if it.CallID == "" {
				return badResponse("output[%d] function_call has no call_id", i)
			}
			if it.Name == "" {
				return badResponse("output[%d] function_call %s has no name", i, it.CallID)
			}
			tc := ToolCall{CallID: it.CallID, Name: it.Name, ArgumentsJSON: argumentsText(it.Arguments)}
			out.calls = append(out.calls, tc)
			out.items = append(out.items, OutputItem{ToolCall: &tc})
		case "reasoning":
			var text *string
			if t := reasoningText(raw); t != "" {
				text = &t
			}
			summary := []string{}
			if len(it.Summary) > 0 && string(it.Summary) != "null" {
				var parts []contentPart
				if err := json.Unmarshal(it.Summary, &parts); err != nil {
					return badResponse("output[%d] reasoning summary: %v", i, err)
				}
				for _, p := range parts {
					summary = append(summary, p.Text)
				}
			}
			out.items = append(out.items, OutputItem{Reasoning: &ReasoningItem{Summary: summary, Text: text}})
		default:
			out.items = append(out.items, OutputItem{Other: &OtherItem{Type: it.Type, JSON: string(raw)}})
		}
	}
	out.text = text.String()
	return nil
}

// messageText concatenates the output_text and refusal parts of a message's
// content (a string is taken as the text itself).
func messageText(content json.RawMessage) (string, error) {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	if c[0] == '"' {
		var s string
		err := json.Unmarshal(c, &s)
		return s, err
	}
	var parts []contentPart
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", fmt.Errorf("content is neither text nor a list of parts: %v", err)
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "output_text", "text", "input_text":
			b.WriteString(p.Text)
		case "refusal":
			b.WriteString(p.Refusal)
		}
	}
	return b.String(), nil
}

// hasRefusal reports whether a message's content has a refusal part.
func hasRefusal(content json.RawMessage) bool {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || c[0] != '[' {
		return false
	}
	var parts []contentPart
	if json.Unmarshal(c, &parts) != nil {
		return false
	}
	for _, p := range parts {
		if p.Type == "refusal" {
			return true
		}
	}
	return false
}

// argumentsText returns a call's arguments as the provider wrote them: the
// string itself, or the raw JSON text of a non-string value.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// chatOnly are the members a chat answer's items carry for Chat
// Completions only (see reasoningFields): a Responses request leaves them
// out, as the Responses API takes no member it does not define.
var chatOnly = [][]byte{[]byte(`"chat_fields"`), []byte(`"extra_content"`)}

// responsesItem returns the item as a Responses request sends it: as
// written, without the members only Chat Completions takes.
func responsesItem(it item) json.RawMessage {
	k := it.kind()
	if k != "reasoning" && k != "function_call" {
		return it.raw
	}
	has := false
	for _, m := range chatOnly {
		has = has || bytes.Contains(it.raw, m)
	}
	if !has {
		return it.raw
	}
	out, ok := dropMembers(it.raw, "chat_fields", "extra_content")
	if !ok {
		return it.raw
	}
	return out
}

// dropMembers returns the JSON object b without the members named keys
// (the others' bytes as they were), and whether b is a well-formed
// object.
func dropMembers(b []byte, keys ...string) ([]byte, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	out := make([]byte, 0, len(b))
	out = append(out, '{')
	first := true
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != '}' {
		from := i
		end, ok := skipString(b, i)
		if !ok {
			return nil, false
		}
		var key string
		if json.Unmarshal(b[i:end], &key) != nil {
			return nil, false
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		if i, ok = skipValue(b, skipSpace(b, i+1)); !ok {
			return nil, false
		}
		if !slices.Contains(keys, key) {
			if !first {
				out = append(out, ',')
			}
			out = append(out, b[from:i]...)
			first = false
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		} else if i >= len(b) || b[i] != '}' {
			return nil, false
		}
	}
	if i >= len(b) {
		return nil, false
	}
	return append(out, '}'), true
}
