// Package llm implements the llm.generate effect: it sends a transcript of
// content-addressed message blobs to a model API (OpenAI's two, or
// Anthropic's and Google's own) and returns a receipt whose every part
// (output items, tool calls, the raw request and response) is stored in
// CAS.
//
// # Providers
//
// Four wire protocols are spoken. Two through github.com/openai/openai-go/v3
// with the SDK's own retries switched off:
//
//   - "openai-responses": POST {base}/responses. Stateless by default: every
//     call sends the whole transcript with store:false and
//     include:["reasoning.encrypted_content"], so reasoning items and
//     function calls from earlier turns are replayed verbatim.
//   - "openai-chat": POST {base}/chat/completions, for OpenAI-compatible
//     servers without the Responses API. The transcript and tools are
//     converted to Chat Completions shape on the way out and the reply is
//     converted back to a Responses-style output array, so everything
//     downstream sees one format.
//
// and two native ones, chosen by the model's name when no provider is
// named (ProviderFor: claude-* and gemini-*), each with its own key and
// base URL variables (KeyEnv, BaseURLEnv):
//
//   - "anthropic": Anthropic's Messages API, POST {base}/v1/messages, sent
//     through github.com/anthropics/anthropic-sdk-go/v2 (API version
//     2026-10-21) with its retries off (anthropic.go).
//   - "gemini": the Gemini API, POST
//     {base}/v1beta/models/{model}:generateContent (or
//     :streamGenerateContent?alt=sse), sent by the adapter (gemini.go).
//
// Both convert the transcript out and the answer back to Responses-style
// items like openai-chat. What of a native answer has no place in a
// Responses item is kept in a member of the item named after the
// provider, and goes back unchanged on every later call to that provider:
//
//   - Anthropic's thinking block is a reasoning item, its text a
//     reasoning_text part, with "anthropic":{"type":"thinking",
//     "signature":S}; a redacted_thinking block a reasoning item with only
//     "anthropic":{"type":"redacted_thinking","data":D}; a block of
//     another type an "anthropic_block" item holding it whole. They go
//     back as the blocks they were, in their place between the text and
//     tool_use blocks (interleaved thinking included), so the API finds
//     each signature as it issued it. A reasoning item without "anthropic"
//     (another provider's) is not sent.
//   - A Gemini part's thoughtSignature is kept in "gemini":{
//     "thoughtSignature":S} of the item the part became (a thought part's
//     reasoning item, a text part's message, a functionCall's
//     function_call; a part of another kind is a "gemini_part" item that
//     holds it whole), and is sent back on that part. A function call
//     another provider made (no "gemini" member) goes with the signature
//     Google documents for calls made elsewhere.
//
// An answer's stop reason is the receipt's finish: Anthropic's tool_use
// "tool_calls", max_tokens and model_context_window_exceeded "length",
// refusal "refusal" with a refusal part, pause_turn continued within
// the call (pause.go) and, still paused after MaxPauseContinuations, an
// incomplete answer; Gemini's MAX_TOKENS "length", SAFETY, RECITATION, BLOCKLIST,
// PROHIBITED_CONTENT, SPII… and a blocked prompt "content_filter" with a
// refusal that says why; a MALFORMED_FUNCTION_CALL (or unexpected or too
// many tool calls) a KindModelFailure tried again. Anthropic's
// overloaded_error (529) and api_error, Gemini's UNAVAILABLE and INTERNAL
// are server errors tried again, in a stream too; a rate limit says its
// reset from the provider's headers (anthropic-ratelimit-*, Gemini's
// RetryInfo). Anthropic's prompt caching is asked for with cache markers
// on the stable prefix (the last tool, the system prompt, the request's
// last message and the one the request before ended with); Gemini caches
// implicitly. Cache reads and writes are in the usage.
//
// # Dialects
//
// OpenAI-compatible servers carry a model's reasoning in fields of their
// own: reasoning_content (DeepSeek, Kimi, GLM, Qwen, vLLM, llama.cpp, xAI),
// reasoning and reasoning_details (OpenRouter, Vercel's gateway, Groq,
// Ollama), a tool call's extra_content (Gemini's thought signature). Those
// that arrive in a Chat Completions answer are kept as they arrived in the
// output items (a reasoning item's "chat_fields", a function call's
// "extra_content") and go back in the same form with that assistant
// message on every later call; a family's rule (Model.ReasoningEcho) adds
// a field every assistant message must carry, a server's rule removes the
// fields it refuses (see servers.go), the model option reasoning_echo
// overrides. The Responses API gets the items without those members.
//
// Usage is normalised to what the provider counts (TokenUsage): input
// with cache reads and writes, output with reasoning, a provider's counts
// outside its totals added back. A cost the answer carries (usage.cost,
// usage.cost_in_usd_ticks) is the call's cost; otherwise the price of the
// model that answered, from the model catalog (catalog.go, CatalogName)
// with demiurge's Rules and the configuration over it (ModelFor).
//
// # Requests built once
//
// A request is not encoded whole every round: its body is spliced (see
// splice.go) from a head — the settings and tools, encoded by the SDK's
// types each call — and the transcript's segments, each item (Responses)
// or run of items (Chat Completions) encoded once for the dialect and kept
// by its identity, joined with commas, the transcript's member last. What
// the last request of a transcript was — its message blobs and items, its
// runs and their segments joined, the chunks of its evidence, how much of
// it was searched for the API key — is kept, and the next request extends
// it in place: it reads, encodes, searches and stores as evidence only
// what is new (chunked.Writer.PutAfter). A transcript named as a reflist
// (Params.Transcript) is read the same way: the refs of the last call of
// the same list are kept, found again from the list's last chunk, and only
// the refs appended since are read (refs.go, reflist.Since), so that a
// round's cost does not grow with the chat. The body goes to the
// connection as its three parts. The bytes are the SDK's for the whole
// request, member for member (TestSpliceMatchesSDK).
//
// The native providers build their bodies from parts made once too
// (native.go): each item is encoded once in the provider's form, the
// messages (Gemini's contents) are spliced from those bytes and kept in
// the chat's session with the body's parts; the next request keeps them
// and remakes only the messages from the first that changed (the last,
// and those whose cache marker moves). The body goes out from its parts,
// and its evidence is stored with chunked.Writer.PutAfter on the chat's
// last request, by the bytes of the parts kept.
//
// # Blobs
//
// A message blob named by Params.MessageRefs is one of: a JSON array of
// Responses input items, one JSON object item (for example
// {"role":"user","content":"hi"} or
// {"type":"function_call_output","call_id":"call_1","output":"..."}), or
// anything else, which is taken as the text of a user message.
//
// The tools blob named by Params.ToolsRef is {"tools":[...]} or a bare array
// of tools in the flat Responses shape
// ({"type":"function","name":..,"description":..,"parameters":{..},"strict":bool});
// a tool in the nested Chat Completions shape ({"type":"function","function":{..}})
// is accepted too.
//
// The receipt's OutputRef names a blob holding the JSON array of the
// response's output items exactly as the provider returned them (for
// "openai-chat", the converted array), so appending OutputRef to the
// transcript replays the model's turn verbatim. Each function call is a
// ToolCall node (canonical CBOR) named in ToolCallRefs, in output order; the
// list of all output items is an OutputItem list node named by
// OutputItemsRef. RequestRef and ResponseRef name the exact request body
// sent and the response body received (for a stream, the final response
// object), kept as evidence.
//
// # Retries and errors
//
// A failed attempt is retried with backoff when it may succeed later (HTTP
// 408, 409, 429 and 5xx, timeouts, connection errors), up to
// Config.MaxAttempts; the receipt counts every attempt, and names
// (FailedAttemptsRef) the list of those that failed, each with its kind,
// status, message, backoff and request and response bodies. Whatever goes wrong
// with the provider is returned as a *ProviderError whose message says what
// happened and what to do; bad parameters or blobs wrap ErrInvalidParams.
//
// # Caveats
//
// The API key is passed to Generate per call and is never stored: it is not
// part of the request body, and any occurrence of it (8 bytes or longer) in
// stored evidence or in error messages is replaced by "[REDACTED]".
package llm
