package realwire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Refusal returns the error a provider answers a request with when its
// shape breaks one of the provider's rules — each rule one that recorded
// traffic shows it enforcing with an HTTP 400 — or nil. vendor and api
// are a Recording's.
//
//   - OpenAI (and Azure OpenAI) refuse max_tokens and a temperature for
//     their reasoning models on Chat Completions ("Unsupported parameter:
//     'max_tokens' is not supported with this model. Use
//     'max_completion_tokens' instead."), and
//     include:["reasoning.encrypted_content"] on the Responses API for a
//     model that does not reason ("Encrypted content is not supported
//     with this model.").
//   - DeepSeek in thinking mode (deepseek-reasoner) refuses a
//     conversation whose assistant messages lack their reasoning_content
//     ("The reasoning_content in the thinking mode must be passed back to
//     the API.").
//   - Moonshot's Kimi thinking models (kimi-k2.5 and later, the
//     *-thinking ones) refuse an assistant message with tool calls that
//     lacks its reasoning_content ("thinking is enabled but
//     reasoning_content is missing in assistant tool call message at
//     index N").
//   - OpenRouter refuses, for a Gemini 3 model, an assistant message with
//     tool calls that lacks its reasoning_details ("Gemini models require
//     OpenRouter reasoning details to be preserved in each request"; the
//     upstream's "Function call is missing a thought_signature").
//   - Gemini's OpenAI-compatible endpoint refuses, for a Gemini 3 model,
//     an assistant message whose first tool call lacks its thought
//     signature (extra_content.google.thought_signature): "Function call
//     is missing a thought_signature in functionCall parts."
//   - Groq refuses reasoning_content in an assistant message ("'messages.N'
//     : for 'role:assistant' the following must be satisfied[('messages.N'
//     : property 'reasoning_content' is unsupported)]").
//   - Mistral refuses a message field it does not define (HTTP 422
//     "Extra inputs are not permitted"), reasoning fields included.
func Refusal(vendor, api string, body []byte) error {
	refuse := func(msg string) error { return ProviderMessage(msg) }
	var req struct {
		Model       string            `json:"model"`
		MaxTokens   *json.RawMessage  `json:"max_tokens"`
		Temperature *float64          `json:"temperature"`
		Include     []string          `json:"include"`
		Messages    []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return refuse("We could not parse the JSON body of your request.")
	}
	reasoning := func(m string) bool {
		for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
			if strings.HasPrefix(m, p) {
				return true
			}
		}
		return false
	}
	switch vendor {
	case "openai", "azure":
		switch {
		case api == "chat" && reasoning(req.Model) && req.MaxTokens != nil:
			return refuse("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
		case api == "chat" && reasoning(req.Model) && req.Temperature != nil && *req.Temperature != 1:
			return refuse("Unsupported value: 'temperature' does not support this value with this model. Only the default (1) value is supported.")
		case api == "responses" && !reasoning(req.Model) && len(req.Include) > 0:
			for _, inc := range req.Include {
				if inc == "reasoning.encrypted_content" {
					return refuse("Encrypted content is not supported with this model.")
				}
			}
		}
	case "moonshot":
		if api != "chat" || !kimiThinking(req.Model) {
			return nil
		}
		for i, m := range req.Messages {
			msg := fields(m)
			if string(msg["role"]) == `"assistant"` && hasList(msg["tool_calls"]) {
				if _, ok := msg["reasoning_content"]; !ok {
					return refuse(fmt.Sprintf("thinking is enabled but reasoning_content is missing in assistant tool call message at index %d", i))
				}
			}
		}
	case "openrouter":
		if api != "chat" || !strings.HasPrefix(req.Model, "google/gemini-3") {
			return nil
		}
		for _, m := range req.Messages {
			msg := fields(m)
			if string(msg["role"]) == `"assistant"` && hasList(msg["tool_calls"]) && !hasList(msg["reasoning_details"]) {
				return refuse("Provider returned error (upstream Google AI Studio: Gemini models require OpenRouter reasoning details to be preserved in each request. Upstream error: Function call is missing a thought_signature in functionCall parts.)")
			}
		}
	case "gemini":
		if api != "chat" || !strings.HasPrefix(req.Model, "gemini-3") {
			return nil
		}
		for _, m := range req.Messages {
			msg := fields(m)
			var calls []struct {
				ExtraContent struct {
					Google struct {
						ThoughtSignature string `json:"thought_signature"`
					} `json:"google"`
				} `json:"extra_content"`
			}
			if string(msg["role"]) == `"assistant"` && json.Unmarshal(msg["tool_calls"], &calls) == nil && len(calls) > 0 &&
				calls[0].ExtraContent.Google.ThoughtSignature == "" {
				return refuse("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance.")
			}
		}
	case "groq":
		for i, m := range req.Messages {
			msg := fields(m)
			if _, ok := msg["reasoning_content"]; ok && string(msg["role"]) == `"assistant"` {
				return refuse(fmt.Sprintf("'messages.%d' : for 'role:assistant' the following must be satisfied[('messages.%d' : property 'reasoning_content' is unsupported)]", i, i))
			}
		}
	case "mistral":
		for i, m := range req.Messages {
			msg := fields(m)
			for _, k := range []string{"reasoning_content", "reasoning", "reasoning_details"} {
				if _, ok := msg[k]; ok {
					return refuse(fmt.Sprintf("Extra inputs are not permitted (body.messages.%d.%s)", i, k))
				}
			}
		}
	case "deepseek":
		if api != "chat" || req.Model != "deepseek-reasoner" {
			return nil
		}
		for _, m := range req.Messages {
			var msg map[string]json.RawMessage
			if json.Unmarshal(m, &msg) != nil {
				continue
			}
			if string(msg["role"]) == `"assistant"` {
				if _, ok := msg["reasoning_content"]; !ok {
					return refuse("The reasoning_content in the thinking mode must be passed back to the API.")
				}
			}
		}
	}
	return nil
}

// kimiThinking reports whether a Kimi model thinks (and so refuses tool
// calls without their reasoning_content).
func kimiThinking(model string) bool {
	for _, p := range []string{"kimi-k2.5", "kimi-k2.6", "kimi-k2.7", "kimi-k3"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return strings.Contains(model, "thinking")
}

// fields splits a JSON object into its members (nil if it is not one).
func fields(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// hasList reports whether raw is a non-empty JSON array.
func hasList(raw json.RawMessage) bool {
	var l []json.RawMessage
	return json.Unmarshal(raw, &l) == nil && len(l) > 0
}

// ProviderMessage is an error that is a provider's own message, verbatim
// (capitalized and punctuated as the provider writes it).
type ProviderMessage string

func (m ProviderMessage) Error() string { return string(m) }
