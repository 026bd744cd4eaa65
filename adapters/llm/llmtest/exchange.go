package llmtest

import "encoding/json"

// Exchange is what a request says of the conversation, read as a model
// reads it: the system prompt, the user's last message, and what
// happened since: the calls the model made and their outputs. A scripted
// model (NewServerFunc) decides its next turn from it, as a model would.
type Exchange struct {
	// Instructions is the system prompt (the Responses API's
	// "instructions", or the system and developer messages).
	Instructions string
	// User is the text of the user's last message; Users counts the
	// user's messages.
	User  string
	Users int
	// Calls are the function calls the model made since the user's last
	// message, in order; Outputs the outputs returned for them, by call
	// id.
	Calls   []Call
	Outputs map[string]string
	// Tools are the names of the tools offered.
	Tools []string
}

// Output returns the output of the i-th call since the user's last
// message, or "" if it has none.
func (x Exchange) Output(i int) string {
	if i < 0 || i >= len(x.Calls) {
		return ""
	}
	return x.Outputs[x.Calls[i].CallID]
}

// Exchange reads the conversation of a Responses or Chat Completions
// request. A body that is not one gives the zero Exchange.
func (r Request) Exchange() Exchange {
	var body struct {
		Instructions string            `json:"instructions"`
		Input        json.RawMessage   `json:"input"`
		Messages     []json.RawMessage `json:"messages"`
		Tools        []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	x := Exchange{Outputs: map[string]string{}}
	if json.Unmarshal(r.Body, &body) != nil {
		return x
	}
	x.Instructions = body.Instructions
	for _, t := range body.Tools {
		name := t.Name
		if name == "" {
			name = t.Function.Name
		}
		x.Tools = append(x.Tools, name)
	}
	var items []json.RawMessage
	if len(body.Input) > 0 {
		var s string
		if json.Unmarshal(body.Input, &s) == nil {
			x.User, x.Users = s, 1
			return x
		}
		_ = json.Unmarshal(body.Input, &items)
	} else {
		items = body.Messages
	}
	for _, raw := range items {
		var it struct {
			Type       string          `json:"type"`
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			CallID     string          `json:"call_id"`
			ToolCallID string          `json:"tool_call_id"`
			Name       string          `json:"name"`
			Arguments  string          `json:"arguments"`
			Output     json.RawMessage `json:"output"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch {
		case it.Type == "function_call":
			x.Calls = append(x.Calls, Call{Name: it.Name, Arguments: it.Arguments, CallID: it.CallID})
		case it.Type == "function_call_output":
			x.Outputs[it.CallID] = text(it.Output)
		case it.Role == "user":
			x.User, x.Users = text(it.Content), x.Users+1
			x.Calls, x.Outputs = nil, map[string]string{}
		case it.Role == "system" || it.Role == "developer":
			if x.Instructions != "" {
				x.Instructions += "\n\n"
			}
			x.Instructions += text(it.Content)
		case it.Role == "tool":
			x.Outputs[it.ToolCallID] = text(it.Content)
		case it.Role == "assistant":
			for _, tc := range it.ToolCalls {
				x.Calls = append(x.Calls, Call{Name: tc.Function.Name, Arguments: tc.Function.Arguments, CallID: tc.ID})
			}
		}
	}
	return x
}

// text reads a content or output field: a string, or a list of parts
// whose texts it joins.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		out := ""
		for _, p := range parts {
			out += p.Text
		}
		return out
	}
	return ""
}
