package llm

// ToolPromptTokens is how many tokens provider adds to a request that
// carries tools beyond what the request's own bytes hold, or 0 when it
// adds none that is known: Anthropic's tool-use system prompt, which the
// answer's input_tokens count and no byte of the request shows. Anthropic
// gives its size per model ("Tool use system prompt token count", in
// the pricing of tool use, docs.anthropic.com/en/docs/agents-and-tools/tool-use/overview):
// for Claude 3.7 Sonnet and the Claude 4 models, 346 tokens with
// tool_choice auto or none and 313 with any or a named tool. This is the
// larger, so that an estimate of a request from it (the chat's, before
// its first call) is never short of what Anthropic counts; a turn's first
// round that forces a tool is over by 33 tokens.
func ToolPromptTokens(provider string) uint64 {
	if provider == ProviderAnthropic {
		return 346
	}
	return 0
}
