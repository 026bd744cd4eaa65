package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
)

// The Gemini API (ProviderGemini): POST
// {base}/v1beta/models/{model}:generateContent, or
// :streamGenerateContent?alt=sse for a stream, with the key in
// x-goog-api-key. The request is built and sent by the adapter from the
// parts it made (native.go); its settings are the few types below, named
// and ordered as google.golang.org/genai's (GenerationConfig,
// ThinkingConfig, ToolConfig, FunctionDeclaration). genai itself is not
// used: it re-encodes a whole request, contents included, through maps on
// every call, and its package brings package testing (its replay client),
// Google Cloud's auth and gRPC into the binary.
//
// A transcript item becomes one or more parts of the content of its role
// (consecutive items of one role make one content):
//
//	user message             user: text (inline data) parts
//	system/developer message user: a text part (contents have no system role)
//	assistant message        model: a text part, with its thoughtSignature
//	reasoning + "gemini"     model: a thought part {text, thought: true, thoughtSignature}
//	reasoning, other         (not sent: another provider's reasoning)
//	function_call            model: functionCall {id, name, args}, with its thoughtSignature
//	function_call_output     user: functionResponse {id, name, response: {output}}
//	gemini_part              the part it holds, unchanged
//
// A function call another provider made carries no signature; Gemini 3
// refuses a function call of the current turn without one, so it is sent
// with the one Google documents for calls made elsewhere
// (base64 of "context_engineering_is_the_way_to_go").
//
// The answer's parts become Responses-style output items, in order: a
// thought part a reasoning item (its text a summary), a text part an
// assistant message, a functionCall part a function_call (call id: the
// part's id, else "call_<response id>_<n>"), any other part a gemini_part
// item that keeps it whole. A part's thoughtSignature is kept in the
// item's "gemini" member ({"thoughtSignature": …}), so the next request
// sends it back with the part that carried it.

// geminiSkipSignature is the signature Google documents for function calls
// Gemini did not make, as it goes on the wire: base64, the field being
// bytes ("context_engineering_is_the_way_to_go", as Gemini 3 took it in
// pydantic-ai's recording of a conversation begun with gpt-5).
var geminiSkipSignature = base64.StdEncoding.EncodeToString([]byte("context_engineering_is_the_way_to_go"))

// geminiExtra is an output item's "gemini" member.
type geminiExtra struct {
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

// geminiItem is the part of a transcript item a Gemini part is made from.
type geminiItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Gemini    json.RawMessage `json:"gemini"`
}

// Parts of a request, in the field order of Google's docs.
type (
	gText struct {
		Text             string `json:"text"`
		Thought          bool   `json:"thought,omitempty"`
		ThoughtSignature string `json:"thoughtSignature,omitempty"`
	}
	gInline struct {
		InlineData gBlob `json:"inlineData"`
	}
	gBlob struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	gCall struct {
		FunctionCall     gFunctionCall `json:"functionCall"`
		ThoughtSignature string        `json:"thoughtSignature,omitempty"`
	}
	gFunctionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	gResponse struct {
		FunctionResponse gFunctionResponse `json:"functionResponse"`
	}
	gFunctionResponse struct {
		ID       string `json:"id,omitempty"`
		Name     string `json:"name"`
		Response any    `json:"response"`
	}
)

// geminiDialect encodes transcript items as Gemini parts.
type geminiDialect struct{}

func (geminiDialect) groupOpen(role string, first bool) []byte {
	return messageOpen(role, "parts", first)
}

// marks: Gemini caches prompts implicitly; no markers.
func (geminiDialect) marks([]string) []int { return nil }

func (geminiDialect) encode(ns *nativeSession, it item) (encoded, error) {
	var gi geminiItem
	if err := json.Unmarshal(it.raw, &gi); err != nil {
		return encoded{}, invalidf("%s: %v", it.where(), err)
	}
	var x geminiExtra
	if len(gi.Gemini) > 0 && string(gi.Gemini) != "null" {
		if err := json.Unmarshal(gi.Gemini, &x); err != nil {
			return encoded{}, invalidf("%s: gemini: %v", it.where(), err)
		}
	}
	parts := func(role string, ps ...[]byte) encoded {
		if len(ps) == 0 {
			return encoded{markAt: -1}
		}
		return encoded{role: role, body: bytes.Join(ps, []byte{','}), markAt: -1}
	}
	switch kind := it.kind(); kind {
	case "message":
		switch gi.Role {
		case "user":
			ps, err := geminiUserContent(gi.Content)
			if err != nil {
				return encoded{}, invalidf("%s: %v", it.where(), err)
			}
			return parts("user", ps...), nil
		case "system", "developer":
			text, err := chatTextParts(gi.Content)
			if err != nil {
				return encoded{}, invalidf("%s: %v", it.where(), err)
			}
			if text == "" {
				return encoded{markAt: -1}, nil
			}
			return parts("user", mustMarshal(gText{Text: text})), nil
		case "assistant":
			texts := assistantTexts(gi.Content)
			var ps [][]byte
			for i, t := range texts {
				p := gText{Text: t}
				if i == len(texts)-1 {
					p.ThoughtSignature = x.ThoughtSignature
				}
				ps = append(ps, mustMarshal(p))
			}
			if len(ps) == 0 && x.ThoughtSignature != "" {
				// A signature that came with an empty text part goes back
				// with one.
				ps = append(ps, mustMarshal(gText{ThoughtSignature: x.ThoughtSignature}))
			}
			return parts("model", ps...), nil
		default:
			return encoded{}, invalidf("%s: role %q is not user, system, developer or assistant", it.where(), gi.Role)
		}
	case "reasoning":
		if len(gi.Gemini) == 0 || string(gi.Gemini) == "null" {
			return encoded{markAt: -1}, nil // another provider's reasoning
		}
		text := summaryText(gi.Summary)
		if text == "" {
			text = reasoningText(it.raw)
		}
		return parts("model", mustMarshal(gText{Text: text, Thought: true, ThoughtSignature: x.ThoughtSignature})), nil
	case "function_call":
		if gi.CallID == "" || gi.Name == "" {
			return encoded{}, invalidf("%s: function_call needs call_id and name", it.where())
		}
		args := json.RawMessage(argumentsText(gi.Arguments))
		if !isJSONObject(args) {
			args = json.RawMessage("{}") // a malformed call, answered with an error
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, args); err == nil {
			args = buf.Bytes()
		}
		sig := x.ThoughtSignature
		if len(gi.Gemini) == 0 || string(gi.Gemini) == "null" {
			sig = geminiSkipSignature // a call another provider made
		}
		if ns.names == nil {
			ns.names = map[string]string{}
		}
		ns.names[gi.CallID] = gi.Name
		return parts("model", mustMarshal(gCall{FunctionCall: gFunctionCall{ID: gi.CallID, Name: gi.Name, Args: args}, ThoughtSignature: sig})), nil
	case "function_call_output":
		if gi.CallID == "" {
			return encoded{}, invalidf("%s: function_call_output needs call_id", it.where())
		}
		name, ok := ns.names[gi.CallID]
		if !ok {
			return encoded{}, invalidf("%s: function_call_output %s follows no function_call of that id (Gemini needs the function's name)", it.where(), gi.CallID)
		}
		text, err := chatTextParts(gi.Output)
		if err != nil {
			return encoded{}, invalidf("%s: output: %v", it.where(), err)
		}
		r := gFunctionResponse{ID: gi.CallID, Name: name, Response: map[string]string{"output": text}}
		return parts("user", mustMarshal(gResponse{FunctionResponse: r})), nil
	case "gemini_part":
		if !isJSONObject(gi.Gemini) {
			return encoded{}, invalidf("%s: gemini_part holds no part", it.where())
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, gi.Gemini); err != nil {
			return encoded{}, invalidf("%s: %v", it.where(), err)
		}
		return parts("model", buf.Bytes()), nil
	default:
		return encoded{}, invalidf("%s: item type %q cannot be sent to provider %s", it.where(), kind, ProviderGemini)
	}
}

// summaryText joins the texts of a reasoning item's summary parts.
func summaryText(summary json.RawMessage) string {
	var ps []contentPart
	_ = json.Unmarshal(summary, &ps)
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Text)
	}
	return b.String()
}

// geminiUserContent converts a user message's content to parts: text,
// and inline data (images and files as data: URLs).
func geminiUserContent(content json.RawMessage) ([][]byte, error) {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || c[0] != '[' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, fmt.Errorf("content must be text or a list of parts")
		}
		// An empty text is sent: Gemini takes it (a request without
		// contents it refuses).
		return [][]byte{mustMarshal(gText{Text: s})}, nil
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
				out = append(out, mustMarshal(gText{Text: p.Text}))
			}
		case "input_image", "input_file":
			u := p.ImageURL
			if p.Type == "input_file" {
				u = p.FileData
			}
			mt, data, ok := dataURL(u)
			if !ok {
				return nil, fmt.Errorf("content[%d]: provider %s takes an %s as a data: URL", i, ProviderGemini, p.Type)
			}
			out = append(out, mustMarshal(gInline{InlineData: gBlob{MIMEType: mt, Data: data}}))
		default:
			return nil, fmt.Errorf("content[%d]: part type %q cannot be sent to provider %s", i, p.Type, ProviderGemini)
		}
	}
	return out, nil
}

// The settings of a generateContent request, as genai's types encode
// them (the fields demiurge sets, in genai's order).
type (
	geminiGenerationConfig struct {
		ResponseJsonSchema json.RawMessage       `json:"responseJsonSchema,omitempty"`
		MaxOutputTokens    int32                 `json:"maxOutputTokens,omitempty"`
		ResponseMIMEType   string                `json:"responseMimeType,omitempty"`
		Temperature        *float32              `json:"temperature,omitempty"`
		ThinkingConfig     *geminiThinkingConfig `json:"thinkingConfig,omitempty"`
	}
	geminiThinkingConfig struct {
		IncludeThoughts bool   `json:"includeThoughts,omitempty"`
		ThinkingBudget  *int32 `json:"thinkingBudget,omitempty"`
		ThinkingLevel   string `json:"thinkingLevel,omitempty"`
	}
	geminiFunctionDeclaration struct {
		Description          string          `json:"description,omitempty"`
		Name                 string          `json:"name,omitempty"`
		ParametersJsonSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	}
	geminiToolConfig struct {
		FunctionCallingConfig *geminiFunctionCallingConfig `json:"functionCallingConfig,omitempty"`
	}
	geminiFunctionCallingConfig struct {
		AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
		Mode                 string   `json:"mode,omitempty"`
	}
)

// geminiHead is the start of a generateContent request, before its
// contents.
type geminiHead struct {
	SystemInstruction *gSystem                `json:"systemInstruction,omitempty"`
	Tools             []geminiTools           `json:"tools,omitempty"`
	ToolConfig        *geminiToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *geminiGenerationConfig `json:"generationConfig,omitempty"`
}

type gSystem struct {
	Parts []gText `json:"parts"`
}

type geminiTools struct {
	FunctionDeclarations []*geminiFunctionDeclaration `json:"functionDeclarations"`
}

// geminiLevels are the thinking levels of Gemini 3 by effort.
var geminiLevels = map[string]string{"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"}

// geminiBudgets are the thinking budgets of Gemini 2.5 by effort.
var geminiBudgets = map[string]int32{"minimal": 512, "low": 1024, "medium": 8192, "high": 24576}

// prepareGemini builds the call's generateContent request.
func (g *Generator) prepareGemini(ctx context.Context, blobs Blobs, c *call, p Params, refs []cas.Ref, tools []tool) error {
	var h geminiHead
	if p.Instructions != nil && *p.Instructions != "" {
		h.SystemInstruction = &gSystem{Parts: []gText{{Text: *p.Instructions}}}
	}
	gc := &geminiGenerationConfig{}
	n, err := tokenLimit(p.MaxTokens, c.model)
	if err != nil {
		return err
	}
	gc.MaxOutputTokens = int32(min(n, 1<<31-1))
	if p.Temperature != nil {
		t, err := parseTemperature(*p.Temperature)
		if err != nil {
			return err
		}
		if c.model.Temperature {
			f := float32(t)
			gc.Temperature = &f
		}
	}
	if c.model.Reasoning {
		// Thought summaries come back as thought parts, shown as the
		// reasoning; the signatures come whether or not.
		gc.ThinkingConfig = &geminiThinkingConfig{IncludeThoughts: true}
		if e := p.ReasoningEffort; e != nil && *e != "" && c.model.ReasoningEffort {
			if strings.HasPrefix(strings.TrimPrefix(p.Model, "models/"), "gemini-2") {
				b, ok := geminiBudgets[*e]
				if !ok {
					return invalidf("reasoning effort %q: provider %s takes minimal, low, medium or high", *e, ProviderGemini)
				}
				gc.ThinkingConfig.ThinkingBudget = &b
			} else {
				l, ok := geminiLevels[*e]
				if !ok {
					return invalidf("reasoning effort %q: provider %s takes minimal, low, medium or high", *e, ProviderGemini)
				}
				gc.ThinkingConfig.ThinkingLevel = l
			}
		}
	}
	if p.ResponseFormat != nil {
		js, _, err := checkTextFormat(*p.ResponseFormat)
		if err != nil {
			return err
		}
		gc.ResponseMIMEType = "application/json"
		gc.ResponseJsonSchema = json.RawMessage(js.SchemaJSON)
	}
	h.GenerationConfig = gc
	if len(tools) > 0 {
		var decls []*geminiFunctionDeclaration
		for _, t := range tools {
			if t.typ != "function" {
				return invalidf("tools: tool type %q is not supported by provider %s (only function tools are)", t.typ, ProviderGemini)
			}
			ft, err := t.function()
			if err != nil {
				return invalidf("tools: %v", err)
			}
			d := &geminiFunctionDeclaration{Name: ft.Name}
			if ft.Description != nil {
				d.Description = *ft.Description
			}
			if ft.Parameters != nil {
				schema, err := marshalNoEscape(ft.Parameters)
				if err != nil {
					return invalidf("tools: function %q: parameters: %v", ft.Name, err)
				}
				d.ParametersJsonSchema = json.RawMessage(schema)
			}
			decls = append(decls, d)
		}
		h.Tools = []geminiTools{{FunctionDeclarations: decls}}
	}
	if tc := p.ToolChoice; tc != nil {
		if err := checkToolChoice(*tc, tools); err != nil {
			return err
		}
		fc := &geminiFunctionCallingConfig{}
		switch tc.Kind {
		case ToolChoiceAuto:
			fc.Mode = "AUTO"
		case ToolChoiceNone:
			fc.Mode = "NONE"
		case ToolChoiceRequired:
			fc.Mode = "ANY"
		case ToolChoiceTool:
			fc.Mode, fc.AllowedFunctionNames = "ANY", []string{tc.Name}
		}
		h.ToolConfig = &geminiToolConfig{FunctionCallingConfig: fc}
	}
	head, err := headOpen(h, "contents")
	if err != nil {
		return err
	}
	c.native, c.session, err = g.buildNative(ctx, blobs, geminiDialect{}, ProviderGemini, refs, c.apiKey,
		func(*nativeSession) ([]byte, error) { return head, nil })
	return err
}

// geminiURL is the URL of a call of model at base.
func geminiURL(base, model string, stream bool) string {
	path := model
	if !strings.HasPrefix(model, "models/") && !strings.HasPrefix(model, "tunedModels/") {
		path = "models/" + url.PathEscape(model)
	}
	if stream {
		return base + "/v1beta/" + path + ":streamGenerateContent?alt=sse"
	}
	return base + "/v1beta/" + path + ":generateContent"
}

// attemptGemini sends the request once.
func (g *Generator) attemptGemini(ctx, actx context.Context, c *call) (exchange, parsed, error) {
	cp := &capture{stream: c.onDelta != nil, sent: c.native}
	req, err := http.NewRequestWithContext(actx, http.MethodPost, geminiURL(g.bases[ProviderGemini], c.model.Name, cp.stream), nil)
	if err != nil {
		return exchange{}, parsed{}, invalidf("model %q: %v", c.model.Name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-client", "demiurge")
	if c.apiKey != "" {
		req.Header.Set("x-goog-api-key", c.apiKey)
	}
	resp, err := cp.middleware(req, g.cfg.HTTPClient.Do)
	ex := exchange{response: cp.body}
	if ctx.Err() != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return ex, parsed{}, ctx.Err()
	}
	if err != nil || cp.status >= 400 || cp.readErr != nil || cp.tooLarge {
		if resp != nil {
			resp.Body.Close()
		}
		pe := g.transportError(c, actx, cp, err)
		geminiError(pe, cp.body)
		return ex, parsed{}, pe
	}
	if !cp.stream {
		res, err := c.parse(cp.body)
		if err != nil {
			return ex, parsed{}, g.parseFailure(c, cp, err)
		}
		return ex, res, nil
	}
	defer resp.Body.Close()
	return g.readStream(ctx, actx, c, cp, resp, nil, &geminiStream{})
}

// geminiError reads what a Gemini error body says beyond errorFields: the
// status ("RESOURCE_EXHAUSTED") as the error's type, and the wait a
// google.rpc.RetryInfo asks for.
func geminiError(pe *ProviderError, body []byte) {
	var e struct {
		Error struct {
			Status  string `json:"status"`
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return
	}
	if e.Error.Status != "" {
		pe.Type = clipText(e.Error.Status, 100)
		if pe.Code == strconv.Itoa(pe.Status) {
			pe.Code = ""
		}
	}
	for _, d := range e.Error.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") && d.RetryDelay != "" {
			if s, err := strconv.ParseFloat(strings.TrimSuffix(d.RetryDelay, "s"), 64); err == nil && s >= 0 && s < 1e6 {
				if pe.header == nil {
					pe.header = http.Header{}
				}
				if pe.header.Get("Retry-After") == "" {
					pe.header.Set("Retry-After", strconv.FormatFloat(s, 'f', -1, 64))
				}
			}
		}
	}
}

// rawGemini is the part of a GenerateContentResponse that is read.
type rawGemini struct {
	Candidates *[]struct {
		Content *struct {
			Parts []json.RawMessage `json:"parts"`
			Role  string            `json:"role"`
		} `json:"content"`
		FinishReason  string `json:"finishReason"`
		FinishMessage string `json:"finishMessage"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        uint64 `json:"promptTokenCount"`
		CandidatesTokenCount    uint64 `json:"candidatesTokenCount"`
		CachedContentTokenCount uint64 `json:"cachedContentTokenCount"`
		ThoughtsTokenCount      uint64 `json:"thoughtsTokenCount"`
		ToolUsePromptTokenCount uint64 `json:"toolUsePromptTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string          `json:"modelVersion"`
	ResponseID   string          `json:"responseId"`
	Error        json.RawMessage `json:"error"`
}

// geminiPart is the part of a response's part that is read.
type geminiPart struct {
	Text             *string `json:"text"`
	Thought          bool    `json:"thought"`
	ThoughtSignature string  `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

// Output items of a Gemini answer.
type (
	outGeminiMessage struct {
		Type    string       `json:"type"`
		Role    string       `json:"role"`
		Status  string       `json:"status"`
		Content []any        `json:"content"`
		Gemini  *geminiExtra `json:"gemini,omitempty"`
	}
	outGeminiCall struct {
		Type      string       `json:"type"`
		CallID    string       `json:"call_id"`
		Name      string       `json:"name"`
		Arguments string       `json:"arguments"`
		Status    string       `json:"status"`
		Gemini    *geminiExtra `json:"gemini"`
	}
	outGeminiPart struct {
		Type   string          `json:"type"`
		Gemini json.RawMessage `json:"gemini"`
	}
)

// geminiCut are the finish reasons that end an answer before it is
// complete: its token limit ("length"), or a filter.
var geminiCut = map[string]string{
	"MAX_TOKENS":               "length",
	"CONTINUATION":             "length",
	"SAFETY":                   "content_filter",
	"RECITATION":               "content_filter",
	"LANGUAGE":                 "content_filter",
	"BLOCKLIST":                "content_filter",
	"PROHIBITED_CONTENT":       "content_filter",
	"SPII":                     "content_filter",
	"IMAGE_SAFETY":             "content_filter",
	"IMAGE_PROHIBITED_CONTENT": "content_filter",
	"IMAGE_RECITATION":         "content_filter",
}

// parseGeminiBody reads a GenerateContentResponse and converts its first
// candidate to a Responses-style output array (see the top of this file).
// A prompt the API blocked is an answer cut by a content filter, with a
// refusal that says why; a malformed function call is a KindModelFailure
// *parseError (retried). It never panics; anything that is not a usable
// reply is a *parseError.
func parseGeminiBody(body []byte) (parsed, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return parsed{}, badResponse("body is not a JSON object: %s", clipText(string(body), 120))
	}
	if !utf8.Valid(trimmed) {
		return parsed{}, badResponse("body is not valid UTF-8")
	}
	var r rawGemini
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return parsed{}, badResponse("body is not a GenerateContentResponse: %v", err)
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		return parsed{}, nativeStreamError(trimmed)
	}
	out := parsed{id: r.ResponseID, model: r.ModelVersion}
	if u := r.UsageMetadata; u != nil {
		out.usageKnown = true
		out.usage = TokenUsage{
			Input:     u.PromptTokenCount + u.ToolUsePromptTokenCount,
			Output:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
			CacheRead: u.CachedContentTokenCount,
			Reasoning: u.ThoughtsTokenCount,
		}
	}
	var output []any
	finish := ""
	switch {
	case r.Candidates != nil && len(*r.Candidates) > 0:
		cand := (*r.Candidates)[0]
		finish = cand.FinishReason
		switch finish {
		case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS":
			msg := "the model wrote a malformed tool call (" + finish + ")"
			if cand.FinishMessage != "" {
				msg += ": " + cand.FinishMessage
			}
			return parsed{}, &parseError{kind: KindModelFailure, code: finish, msg: msg, retryable: true}
		}
		status := "completed"
		if geminiCut[finish] != "" {
			status = "incomplete"
		}
		var parts []json.RawMessage
		if cand.Content != nil {
			parts = cand.Content.Parts
		}
		var err error
		if output, err = geminiOutput(parts, r.ResponseID, status); err != nil {
			return parsed{}, err
		}
		if cut := geminiCut[finish]; cut == "content_filter" {
			why := "the answer was blocked (" + finish + ")"
			if cand.FinishMessage != "" {
				why += ": " + cand.FinishMessage
			}
			output = append(output, outMessage{Type: "message", Role: "assistant", Status: status, Content: []any{outRefusal{Type: "refusal", Refusal: why}}})
		}
	case r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "":
		// The API blocked the prompt: no candidate.
		finish = "SAFETY"
		why := "the prompt was blocked (" + r.PromptFeedback.BlockReason + ")"
		if m := r.PromptFeedback.BlockReasonMessage; m != "" {
			why += ": " + m
		}
		output = []any{outMessage{Type: "message", Role: "assistant", Status: "incomplete", Content: []any{outRefusal{Type: "refusal", Refusal: why}}}}
	default:
		return parsed{}, badResponse("response has no candidate")
	}
	if output == nil {
		output = []any{}
	}
	var err error
	if out.output, err = marshalNoEscape(output); err != nil {
		return parsed{}, badResponse("convert reply: %v", err)
	}
	if err := parseOutputItems(out.output, &out); err != nil {
		return parsed{}, err
	}
	if cut := geminiCut[finish]; cut != "" {
		out.finish = cut
	} else {
		out.finish = finishReason("", false, len(out.calls) > 0)
	}
	return out, nil
}

// geminiOutput converts a candidate's parts to output items.
func geminiOutput(parts []json.RawMessage, responseID, status string) ([]any, error) {
	var output []any
	var last *outGeminiMessage      // the message text parts go to, while they follow one another unsigned
	var thought *outNativeReasoning // the same for thought parts
	for i, raw := range parts {
		var p geminiPart
		if len(raw) == 0 || raw[0] != '{' {
			return nil, badResponse("parts[%d] is not an object", i)
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, badResponse("parts[%d]: %v", i, err)
		}
		var extra *geminiExtra
		if p.ThoughtSignature != "" {
			extra = &geminiExtra{ThoughtSignature: p.ThoughtSignature}
		}
		if p.FunctionCall != nil || p.Text == nil || !p.Thought {
			thought = nil
		}
		switch {
		case p.FunctionCall != nil:
			last = nil
			fc := p.FunctionCall
			if fc.Name == "" {
				return nil, badResponse("parts[%d] functionCall has no name", i)
			}
			id := fc.ID
			if id == "" {
				id = "call_" + idSafe(responseID) + "_" + strconv.Itoa(i)
			}
			args := "{}"
			if len(fc.Args) > 0 && string(fc.Args) != "null" {
				var buf bytes.Buffer
				if err := json.Compact(&buf, fc.Args); err != nil {
					return nil, badResponse("parts[%d] functionCall args: %v", i, err)
				}
				args = buf.String()
			}
			if extra == nil {
				extra = &geminiExtra{} // Gemini made the call, with or without a signature
			}
			output = append(output, outGeminiCall{Type: "function_call", CallID: id, Name: fc.Name, Arguments: args, Status: status, Gemini: extra})
		case p.Text != nil && p.Thought:
			last = nil
			if thought != nil && thought.Gemini.ThoughtSignature == "" {
				// Thought pieces run on; a signature comes on the last.
				if *p.Text != "" {
					if len(thought.Summary) == 0 {
						thought.Summary = []any{outSummary{Type: "summary_text"}}
					}
					t := thought.Summary[0].(outSummary)
					t.Text += *p.Text
					thought.Summary[0] = t
				}
				if extra != nil {
					thought.Gemini = extra
				}
				continue
			}
			if extra == nil {
				extra = &geminiExtra{}
			}
			rs := &outNativeReasoning{Type: "reasoning", Summary: []any{}, Gemini: extra}
			if *p.Text != "" {
				rs.Summary = []any{outSummary{Type: "summary_text", Text: *p.Text}}
			}
			output = append(output, rs)
			thought = rs
		case p.Text != nil:
			if last != nil && last.Gemini == nil {
				// Text parts run on (a stream's pieces); a signature
				// comes on the last.
				last.Content[0] = outText{Type: "output_text", Text: last.Content[0].(outText).Text + *p.Text, Annotations: []any{}}
				last.Gemini = extra
				continue
			}
			msg := &outGeminiMessage{Type: "message", Role: "assistant", Status: status,
				Content: []any{outText{Type: "output_text", Text: *p.Text, Annotations: []any{}}}, Gemini: extra}
			output = append(output, msg)
			last = msg
		default:
			last = nil
			var buf bytes.Buffer
			if err := json.Compact(&buf, raw); err != nil {
				return nil, badResponse("parts[%d]: %v", i, err)
			}
			output = append(output, outGeminiPart{Type: "gemini_part", Gemini: buf.Bytes()})
		}
	}
	// An empty text part that only carried a signature stays, so that the
	// signature goes back; one that carried nothing goes.
	kept := output[:0]
	for _, o := range output {
		if m, ok := o.(*outGeminiMessage); ok && m.Content[0].(outText).Text == "" && m.Gemini == nil {
			continue
		}
		kept = append(kept, o)
	}
	return kept, nil
}

// geminiStream accumulates a streamed GenerateContentResponse: the parts
// of its chunks in order (text pieces joined), the last finish reason and
// usage.
type geminiStream struct {
	parts    []json.RawMessage
	finish   string
	message  string
	usage    json.RawMessage
	feedback json.RawMessage
	model    string
	id       string
	ended    bool
	// texted: text was delivered; apart: a part of another kind came
	// since, so the next text starts a line (as parseOutputItems joins
	// the answer's text).
	texted, apart bool
}

func (s *geminiStream) endName() string { return "a finishReason" }

func (s *geminiStream) done() bool { return s.ended }

// geminiChunk is the part of a streamed chunk that is read.
type geminiChunk struct {
	Candidates []struct {
		Content *struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"content"`
		FinishReason  string `json:"finishReason"`
		FinishMessage string `json:"finishMessage"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata json.RawMessage `json:"usageMetadata"`
	ModelVersion  string          `json:"modelVersion"`
	ResponseID    string          `json:"responseId"`
	Error         json.RawMessage `json:"error"`
}

func (s *geminiStream) add(_ string, data []byte) (string, error) {
	var c geminiChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return "", badResponse("stream chunk is not a GenerateContentResponse: %v", err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return "", nativeStreamError(data)
	}
	if c.ModelVersion != "" {
		s.model = c.ModelVersion
	}
	if c.ResponseID != "" {
		s.id = c.ResponseID
	}
	if len(c.UsageMetadata) > 0 && string(c.UsageMetadata) != "null" {
		s.usage = c.UsageMetadata
	}
	if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
		s.feedback = mustMarshal(c.PromptFeedback)
		s.ended = true
	}
	var delta strings.Builder
	for i, cand := range c.Candidates {
		if i > 0 {
			break // only the first candidate is used
		}
		if cand.Content != nil {
			for _, raw := range cand.Content.Parts {
				var p geminiPart
				_ = json.Unmarshal(raw, &p)
				switch {
				case p.Text != nil && !p.Thought && p.FunctionCall == nil:
					if *p.Text != "" {
						if s.apart {
							delta.WriteByte('\n')
						}
						delta.WriteString(*p.Text)
						s.texted, s.apart = true, false
					}
				default:
					s.apart = s.texted
				}
				s.parts = append(s.parts, raw)
			}
		}
		if cand.FinishReason != "" {
			s.finish, s.message = cand.FinishReason, cand.FinishMessage
			s.ended = true
		}
	}
	return delta.String(), nil
}

func (s *geminiStream) assemble() ([]byte, error) {
	type content struct {
		Parts []json.RawMessage `json:"parts"`
		Role  string            `json:"role"`
	}
	type candidate struct {
		Content       content `json:"content"`
		FinishReason  string  `json:"finishReason,omitempty"`
		FinishMessage string  `json:"finishMessage,omitempty"`
		Index         int     `json:"index"`
	}
	type response struct {
		Candidates     []candidate     `json:"candidates,omitempty"`
		PromptFeedback json.RawMessage `json:"promptFeedback,omitempty"`
		UsageMetadata  json.RawMessage `json:"usageMetadata,omitempty"`
		ModelVersion   string          `json:"modelVersion,omitempty"`
		ResponseID     string          `json:"responseId,omitempty"`
	}
	r := response{PromptFeedback: s.feedback, UsageMetadata: s.usage, ModelVersion: s.model, ResponseID: s.id}
	if s.feedback == nil {
		parts := s.parts
		if parts == nil {
			parts = []json.RawMessage{}
		}
		r.Candidates = []candidate{{Content: content{Parts: parts, Role: "model"}, FinishReason: s.finish, FinishMessage: s.message}}
	}
	return marshalNoEscape(r)
}
