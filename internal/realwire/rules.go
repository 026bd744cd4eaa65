package realwire

import (
	"encoding/json"
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

// ProviderMessage is an error that is a provider's own message, verbatim
// (capitalized and punctuated as the provider writes it).
type ProviderMessage string

func (m ProviderMessage) Error() string { return string(m) }
