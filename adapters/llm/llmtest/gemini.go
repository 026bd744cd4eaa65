package llmtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// The Gemini API, as the server plays it: answers in its shapes (a
// GenerateContentResponse, or a stream of them), its error bodies, its
// implicit prompt cache, its thought signatures, and refusals of what a
// Gemini 3 model refuses (see refuseGemini).

// geminiSkip reports whether a signature is one Google documents for
// function calls another model made (base64 on the wire).
func geminiSkip(sig string) bool {
	b, err := base64.StdEncoding.DecodeString(sig)
	return err == nil && (string(b) == "context_engineering_is_the_way_to_go" || string(b) == "skip_thought_signature_validator")
}

// canonicalJSON re-encodes a JSON value with sorted keys ("{}" if it is
// not JSON).
func canonicalJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return "{}"
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// geminiCallSignature is the thought signature the server gives the first
// function call of an answer: a hash of the call, so that a call sent back
// altered, or without it, is refused.
func geminiCallSignature(name string, args []byte) string {
	sum := sha256.Sum256([]byte("llmtest|gemini-call|" + name + "|" + canonicalJSON(args)))
	return "Cq" + base64.StdEncoding.EncodeToString(append(sum[:], sum[:8]...))
}

// geminiTextSignature is the signature of an answer without calls, on its
// text.
func geminiTextSignature(text string) string {
	sum := sha256.Sum256([]byte("llmtest|gemini-text|" + text))
	return "Cq" + base64.StdEncoding.EncodeToString(append(sum[:], sum[:8]...))
}

// geminiFinish is the answer's finishReason.
func (a *answer) geminiFinish() string {
	switch t := a.turn.Incomplete; t {
	case "":
		return "STOP"
	case "max_output_tokens", "max_tokens", "length":
		return "MAX_TOKENS"
	case "content_filter":
		return "SAFETY"
	default:
		return t
	}
}

// wantsThoughts reports whether the request asked for thought summaries.
func (a *answer) wantsThoughts() bool {
	var gc struct {
		ThinkingConfig struct {
			IncludeThoughts bool `json:"includeThoughts"`
		} `json:"thinkingConfig"`
	}
	_ = json.Unmarshal(a.raw["generationConfig"], &gc)
	return gc.ThinkingConfig.IncludeThoughts
}

// thinks reports whether the model thinks (its thought tokens are
// counted, and it signs its answers): Gemini 2.5 and 3.
func (a *answer) thinks() bool {
	return strings.Contains(a.req.Model, "gemini-2.5") || strings.Contains(a.req.Model, "gemini-3")
}

// geminiParts returns the answer's parts: a thought part (if the request
// asked for them), the text, the function calls; the first call, or else
// the text, carries the thought signature.
func (a *answer) geminiParts() []map[string]any {
	t := a.turn
	var out []map[string]any
	if t.Reasoning != "" && a.wantsThoughts() {
		out = append(out, map[string]any{"text": t.Reasoning, "thought": true})
	}
	if t.Text != "" {
		p := map[string]any{"text": t.Text}
		if len(t.Calls) == 0 && a.thinks() {
			p["thoughtSignature"] = geminiTextSignature(t.Text)
		}
		out = append(out, p)
	}
	for i, c := range t.Calls {
		var args any = json.RawMessage(c.Arguments)
		if !json.Valid([]byte(c.Arguments)) {
			args = map[string]any{}
		}
		fc := map[string]any{"name": c.Name, "args": args}
		if c.CallID != "" {
			fc["id"] = c.CallID
		}
		p := map[string]any{"functionCall": fc}
		if i == 0 && a.thinks() {
			p["thoughtSignature"] = geminiCallSignature(c.Name, mustJSON(args))
		}
		out = append(out, p)
	}
	return out
}

// geminiUsage returns the answer's usageMetadata.
func (a *answer) geminiUsage() map[string]any {
	u := a.usage()
	cached := u.Cached
	if a.turn.Usage == nil {
		// The cache's count is of the parts as it keeps them: the prompt
		// counts at least what it read (cachedContentTokenCount is part
		// of promptTokenCount).
		cached = a.cached.read
		u.Input = max(u.Input, cached)
	}
	out := u.Output
	thoughts := u.Reasoning
	if a.turn.Usage == nil && a.thinks() {
		thoughts = 16 + tokens(a.turn.Reasoning)
	}
	if a.turn.Usage == nil && a.turn.Blocked != "" {
		// A blocked prompt has no candidate: nothing was generated.
		out, thoughts = 0, 0
	}
	if a.turn.Usage != nil {
		out -= thoughts // Gemini counts the thoughts apart
	}
	m := map[string]any{"promptTokenCount": u.Input, "candidatesTokenCount": out, "totalTokenCount": u.Input + out + thoughts}
	if thoughts > 0 {
		m["thoughtsTokenCount"] = thoughts
	}
	if cached > 0 {
		m["cachedContentTokenCount"] = cached
	}
	return m
}

// geminiResponse returns the GenerateContentResponse of the turn.
func (a *answer) geminiResponse() map[string]any {
	r := map[string]any{"usageMetadata": a.geminiUsage(), "modelVersion": a.model(), "responseId": a.hexID("gresp", 0, 22)}
	if a.turn.Blocked != "" {
		r["promptFeedback"] = map[string]any{"blockReason": a.turn.Blocked}
		return r
	}
	parts := a.geminiParts()
	cand := map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "finishReason": a.geminiFinish(), "index": 0}
	if a.turn.Refusal != "" {
		cand["finishReason"], cand["finishMessage"] = "SAFETY", a.turn.Refusal
	}
	if len(parts) == 0 {
		cand["content"] = map[string]any{"role": "model"}
	}
	r["candidates"] = []any{cand}
	return r
}

// geminiChunks returns the stream of the turn: the thought, the text word
// by word, each call whole, then a last chunk with an empty text part
// that carries the text's signature (as Gemini sends it), the finish
// reason and the usage.
func (a *answer) geminiChunks() []sseEvent {
	full := a.geminiResponse()
	var events []sseEvent
	chunk := func(parts []map[string]any, last bool) {
		c := map[string]any{"modelVersion": full["modelVersion"], "responseId": full["responseId"]}
		cand := map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "index": 0}
		if last {
			cand["finishReason"] = full["candidates"].([]any)[0].(map[string]any)["finishReason"]
			if m, ok := full["candidates"].([]any)[0].(map[string]any)["finishMessage"]; ok {
				cand["finishMessage"] = m
			}
			c["usageMetadata"] = full["usageMetadata"]
		}
		c["candidates"] = []any{cand}
		events = append(events, sseEvent{data: mustJSON(c)})
	}
	if e := a.turn.StreamError; e != nil {
		msg := e.Message
		if msg == "" {
			msg = "The model is overloaded. Please try again later."
		}
		d, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 503, "message": msg, "status": "UNAVAILABLE"}})
		return []sseEvent{{data: d}}
	}
	if _, blocked := full["promptFeedback"]; blocked {
		return []sseEvent{{data: mustJSON(full)}}
	}
	var signature string
	for _, p := range a.geminiParts() {
		switch {
		case p["functionCall"] != nil:
			chunk([]map[string]any{p}, false)
		case p["thought"] == true:
			for _, w := range words(p["text"].(string)) {
				chunk([]map[string]any{{"text": w, "thought": true}}, false)
			}
		default:
			for _, w := range words(p["text"].(string)) {
				chunk([]map[string]any{{"text": w}}, false)
			}
			if s, ok := p["thoughtSignature"].(string); ok {
				signature = s
			}
		}
	}
	last := []map[string]any{{"text": ""}}
	if signature != "" {
		last[0]["thoughtSignature"] = signature
	}
	chunk(last, true)
	return events
}

// gContent and gPart are the parts of a request's contents the checks
// read.
type (
	gContent struct {
		Role  string  `json:"role"`
		Parts []gPart `json:"parts"`
	}
	gPart struct {
		Text             *string `json:"text"`
		Thought          bool    `json:"thought"`
		ThoughtSignature string  `json:"thoughtSignature"`
		FunctionCall     *struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
		FunctionResponse *struct {
			Name string `json:"name"`
		} `json:"functionResponse"`
	}
)

// refuseGemini returns the message of Gemini's refusal of a request for
// model, or "": a signature the model never gave (or one taken from
// another part), a Gemini 3 function call of the current turn without its
// signature, function responses that do not answer the calls before them
// (the API's documented rules; the words are the fake's, after the API's).
func refuseGemini(model string, raw map[string]json.RawMessage) string {
	var contents []gContent
	if err := json.Unmarshal(raw["contents"], &contents); err != nil || len(contents) == 0 {
		return "* GenerateContentRequest.contents: contents is not specified"
	}
	strict := strings.Contains(model, "gemini-3")
	// The current turn begins after the last user content with text.
	turn := 0
	for i, c := range contents {
		if c.Role == "user" {
			for _, p := range c.Parts {
				if p.Text != nil {
					turn = i + 1
				}
			}
		}
	}
	for i, c := range contents {
		if c.Role != "user" && c.Role != "model" {
			return fmt.Sprintf("* GenerateContentRequest.contents[%d].role: Please use a valid role: user, model.", i)
		}
		if len(c.Parts) == 0 {
			return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		calls := 0
		for j, p := range c.Parts {
			if s := p.ThoughtSignature; s != "" && !geminiSkip(s) {
				ok := false
				switch {
				case p.FunctionCall != nil:
					ok = s == geminiCallSignature(p.FunctionCall.Name, p.FunctionCall.Args)
				case p.Text != nil && !p.Thought:
					ok = s == geminiTextSignature(*p.Text)
				default:
					ok = true
				}
				if !ok {
					return fmt.Sprintf("Corrupted thought signature. (contents[%d].parts[%d])", i, j)
				}
			}
			if p.FunctionCall != nil {
				calls++
				if strict && calls == 1 && i >= turn && p.ThoughtSignature == "" {
					return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, j+1)
				}
			}
		}
		if calls > 0 && i+1 < len(contents) {
			responses := 0
			for _, p := range contents[i+1].Parts {
				if p.FunctionResponse != nil {
					responses++
				}
			}
			if responses != calls {
				return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
			}
		}
	}
	return ""
}
