package llm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fxamacker/cbor/v2"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/reflist"
)

// Provider names accepted in Params.Provider and Config.Provider.
const (
	// ProviderResponses speaks the OpenAI Responses API (POST {base}/responses).
	ProviderResponses = "openai-responses"
	// ProviderChat speaks the Chat Completions API (POST {base}/chat/completions).
	ProviderChat = "openai-chat"
	// ProviderAnthropic speaks Anthropic's Messages API (POST {base}/v1/messages).
	ProviderAnthropic = "anthropic"
	// ProviderGemini speaks the Gemini API (POST
	// {base}/v1beta/models/{model}:generateContent).
	ProviderGemini = "gemini"
)

// providers are the wire APIs Generate speaks, in the order messages list
// them: a provider of another API adds its name here (and its request
// and answer to prepare, attempt and parse).
var providers = []string{ProviderResponses, ProviderChat, ProviderAnthropic, ProviderGemini}

// Providers returns the names of the wire APIs Generate speaks.
func Providers() []string { return slices.Clone(providers) }

// IsProvider reports whether name is one of Providers.
func IsProvider(name string) bool { return slices.Contains(providers, name) }

// ProviderFor returns the provider that speaks to the model name by
// default: ProviderAnthropic for "claude-*", ProviderGemini for
// "gemini-*" (and "models/gemini-*"), else ProviderResponses.
func ProviderFor(model string) string {
	switch m := strings.TrimPrefix(model, "models/"); {
	case strings.HasPrefix(m, "claude-"):
		return ProviderAnthropic
	case strings.HasPrefix(m, "gemini-"):
		return ProviderGemini
	}
	return ProviderResponses
}

// isNative reports whether provider speaks a wire format of its own, not
// OpenAI's.
func isNative(provider string) bool {
	return provider == ProviderAnthropic || provider == ProviderGemini
}

// KeyEnv returns the environment variables that hold the API key of
// provider, in the order they are read.
func KeyEnv(provider string) []string {
	switch provider {
	case ProviderAnthropic:
		return []string{"ANTHROPIC_API_KEY"}
	case ProviderGemini:
		return []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}
	}
	return []string{"OPENAI_API_KEY"}
}

// BaseURLEnv returns the environment variable that holds the base URL of
// provider.
func BaseURLEnv(provider string) string {
	switch provider {
	case ProviderAnthropic:
		return "ANTHROPIC_BASE_URL"
	case ProviderGemini:
		return "GOOGLE_GEMINI_BASE_URL"
	}
	return "OPENAI_BASE_URL"
}

// Params are the parameters of one llm.generate effect, the Go form of
// sys/LlmGenerateParams@1. Option fields are pointers; a nil pointer encodes
// as CBOR null, as the typed-value normalizer writes a missing option.
type Params struct {
	// Provider is one of Providers; "" means the Generator's default
	// (Config.Provider).
	Provider string `cbor:"provider"`
	// Model is the provider's model name. Required.
	Model string `cbor:"model"`
	// Temperature is a decimal text such as "0.2", between 0 and 2; nil
	// leaves the provider's default.
	Temperature *string `cbor:"temperature"`
	// MaxTokens caps the output tokens (max_output_tokens, or max_tokens
	// for Chat Completions); 0 leaves the provider's default.
	MaxTokens uint64 `cbor:"max_tokens"`
	// MessageRefs name the message blobs of the transcript, oldest first;
	// the messages of Transcript follow them. One or the other must name
	// at least one.
	MessageRefs []cas.Ref `cbor:"message_refs"`
	// ToolsRef names the tools blob; nil sends no tools.
	ToolsRef *cas.Ref `cbor:"tools_ref"`
	// ToolChoice says whether and which tool the model must call; nil
	// leaves the provider's default.
	ToolChoice *ToolChoice `cbor:"tool_choice"`
	// APIKey is the sys/TextOrSecretRef@1 value the world resolves before
	// dispatch. Generate never reads it: the plaintext key is passed to
	// Generate separately. It is kept opaque here so that params round-trip.
	APIKey cbor.RawMessage `cbor:"api_key"`
	// ResponseFormat asks for structured output (text.format json_schema,
	// or response_format for Chat Completions); nil for free text.
	ResponseFormat *TextFormat `cbor:"response_format"`
	// Instructions is the system prompt; nil for none.
	Instructions *string `cbor:"instructions"`
	// PreviousResponseID chains this call to a response stored by the
	// provider (Responses only; see Generator.Generate for what is sent).
	PreviousResponseID *string `cbor:"previous_response_id"`
	// ReasoningEffort is passed as reasoning.effort (reasoning_effort for
	// Chat Completions), e.g. "low"; nil leaves the provider's default.
	ReasoningEffort *string `cbor:"reasoning_effort"`
	// InstructionsRef, if set, names a blob whose text is the system
	// prompt (after Instructions, if both are set).
	InstructionsRef *cas.Ref `cbor:"instructions_ref,omitempty"`
	// Transcript, if set, names the rest of the transcript as a reflist
	// in the store (sys/LlmGenerateParams@2): a chat of any length is
	// named in a few hundred bytes. Nil in sys/LlmGenerateParams@1.
	Transcript *Transcript `cbor:"transcript,omitempty"`
}

// Transcript is the Go form of sys/LlmTranscript@1: the message blobs
// Prefix ++ Refs[From:To] ++ Suffix (To nil: to the end of Refs).
type Transcript struct {
	Refs   reflist.List `cbor:"refs"`
	From   uint64       `cbor:"from"`
	To     *uint64      `cbor:"to"`
	Prefix []cas.Ref    `cbor:"prefix"`
	Suffix []cas.Ref    `cbor:"suffix"`
}

// refs returns the message blobs t names, reading the reflist's chunks
// from g.
func (t *Transcript) refs(ctx context.Context, g cas.Getter, cache *reflist.Cache) ([]cas.Ref, error) {
	to := t.Refs.Len
	if t.To != nil {
		to = *t.To
	}
	mid, err := reflist.Slice(ctx, g, cache, t.Refs, t.From, to)
	if err != nil {
		return nil, fmt.Errorf("%w: transcript: %w", ErrInvalidParams, err)
	}
	if len(t.Prefix) == 0 && len(t.Suffix) == 0 {
		return mid, nil
	}
	out := make([]cas.Ref, 0, len(t.Prefix)+len(mid)+len(t.Suffix))
	out = append(append(append(out, t.Prefix...), mid...), t.Suffix...)
	return out, nil
}

// MarshalCBOR encodes p canonically; a nil MessageRefs encodes as an empty
// list, never null.
func (p Params) MarshalCBOR() ([]byte, error) {
	type plain Params
	if p.MessageRefs == nil {
		p.MessageRefs = []cas.Ref{}
	}
	return cas.MarshalBody(plain(p))
}

// TokenUsage counts the tokens of one call as the provider counts them,
// normalised across providers: Input counts every token of the request,
// those read from the provider's cache and those written to it included;
// Output counts every token of the answer, reasoning included. CacheRead,
// CacheWrite and Reasoning are parts of them, reported apart because they
// are priced apart. It is the Go form of sys/LlmTokenUsage@2 (see
// tokenUsageV1 for @1).
//
// Providers that count cached or reasoning tokens outside their totals
// (Anthropic's input_tokens leaves out cache reads and writes; some
// OpenAI-compatible servers leave reasoning out of completion_tokens) are
// normalised when their answer is parsed, so Input+Output is what the
// context window held.
type TokenUsage struct {
	// Input is the request's tokens, cache reads and writes included.
	Input uint64 `cbor:"input" json:"input"`
	// Output is the answer's tokens, reasoning included.
	Output uint64 `cbor:"output" json:"output"`
	// CacheRead is the part of Input read from the provider's prompt cache.
	CacheRead uint64 `cbor:"cache_read" json:"cache_read"`
	// CacheWrite is the part of Input written to the provider's prompt
	// cache (Anthropic's cache_creation_input_tokens), priced apart.
	CacheWrite uint64 `cbor:"cache_write" json:"cache_write"`
	// Reasoning is the part of Output the model spent reasoning.
	Reasoning uint64 `cbor:"reasoning" json:"reasoning"`
}

// Total is Input+Output: what the call held of the context window.
func (u TokenUsage) Total() uint64 { return u.Input + u.Output }

// tokenUsageV1 is sys/LlmTokenUsage@1: prompt includes cached, completion
// includes reasoning; it has no count of cache writes (they are in prompt).
type tokenUsageV1 struct {
	Prompt     uint64 `cbor:"prompt"`
	Completion uint64 `cbor:"completion"`
	Cached     uint64 `cbor:"cached"`
	Reasoning  uint64 `cbor:"reasoning"`
}

func (u TokenUsage) v1() tokenUsageV1 {
	return tokenUsageV1{Prompt: u.Input, Completion: u.Output, Cached: u.CacheRead, Reasoning: u.Reasoning}
}

func (u tokenUsageV1) v2() TokenUsage {
	return TokenUsage{Input: u.Prompt, Output: u.Completion, CacheRead: u.Cached, Reasoning: u.Reasoning}
}

// CostSourceKind says where a call's cost came from.
type CostSourceKind string

// The arms of sys/LlmCostSource@1.
const (
	// CostFromProvider: the answer carried its own cost (OpenRouter's
	// usage.cost, xAI's usage.cost_in_usd_ticks, a gateway's cost field),
	// and that is the call's cost.
	CostFromProvider CostSourceKind = "Provider"
	// CostFromPrice: the usage at the price of the model that answered,
	// as the model catalog (or an override) gives it.
	CostFromPrice CostSourceKind = "Price"
)

// CostSource says where a receipt's cost came from, the Go form of
// sys/LlmCostSource@1 = variant { Provider{field: text},
// Price{model: text, source: text} }.
type CostSource struct {
	Kind CostSourceKind `json:"kind"`
	// Field names the answer's field the cost was read from
	// ("usage.cost"); set for CostFromProvider.
	Field string `json:"field,omitempty"`
	// Model is the model whose price was used (the one that answered,
	// else the one asked for), and Source where that price came from (the
	// catalog, or an override); set for CostFromPrice.
	Model  string `json:"model,omitempty"`
	Source string `json:"source,omitempty"`
}

// String describes the source for people: "reported by the provider
// (usage.cost)", "priced from catwalk v0.52.1 (openai) for gpt-5.2".
func (c CostSource) String() string { return c.Describe("") }

// Describe is String naming who reported a provider's cost, provider
// (as a receipt's ProviderName names it; "" for "the provider"):
// "reported by openrouter (usage.cost)".
func (c CostSource) Describe(provider string) string {
	switch c.Kind {
	case CostFromProvider:
		if provider == "" {
			provider = "the provider"
		}
		return "reported by " + provider + " (" + c.Field + ")"
	case CostFromPrice:
		return "priced from " + c.Source + " for " + c.Model
	}
	return "unknown"
}

type costFromProvider struct {
	Field string `cbor:"field"`
}

type costFromPrice struct {
	Model  string `cbor:"model"`
	Source string `cbor:"source"`
}

// MarshalCBOR encodes c in the canonical variant form.
func (c CostSource) MarshalCBOR() ([]byte, error) {
	switch c.Kind {
	case CostFromProvider:
		return marshalVariant(string(c.Kind), costFromProvider{Field: c.Field})
	case CostFromPrice:
		return marshalVariant(string(c.Kind), costFromPrice{Model: c.Model, Source: c.Source})
	}
	return nil, fmt.Errorf("llm: encode cost source: kind %q is not Provider or Price", c.Kind)
}

// UnmarshalCBOR decodes the canonical variant form.
func (c *CostSource) UnmarshalCBOR(b []byte) error {
	const what = "llm: decode cost source"
	tag, value, err := unmarshalVariant(what, b)
	if err != nil {
		return err
	}
	switch CostSourceKind(tag) {
	case CostFromProvider:
		var v costFromProvider
		if err := decodeRecord(what+" Provider", value, &v, "field"); err != nil {
			return err
		}
		*c = CostSource{Kind: CostFromProvider, Field: v.Field}
	case CostFromPrice:
		var v costFromPrice
		if err := decodeRecord(what+" Price", value, &v, "model", "source"); err != nil {
			return err
		}
		*c = CostSource{Kind: CostFromPrice, Model: v.Model, Source: v.Source}
	default:
		return fmt.Errorf("%s: arm %q is not Provider or Price", what, tag)
	}
	return nil
}

// Receipt is the result of one llm.generate effect, the Go form of
// sys/LlmGenerateReceipt@3 (and of @2 and @1, which it is also encoded
// as: see MarshalV2 and MarshalV1). Every ref names a blob or node
// Generate wrote to the store it was given.
type Receipt struct {
	// OutputRef names the JSON array of the response's output items.
	OutputRef cas.Ref
	// OutputText is the concatenated text of the assistant's messages
	// (output_text and refusal parts, in order).
	OutputText string
	// TokenUsage is the provider's token count, if UsageKnown.
	TokenUsage TokenUsage
	// UsageKnown reports whether the provider said how many tokens the
	// call used (a server that streams without being asked for usage
	// says nothing). Encoded as a null token_usage.
	UsageKnown bool
	// CostCents is CostMicroUSD in cents, rounded half up (not encoded
	// in @3, which has the micro-USD).
	CostCents uint64
	// CostMicroUSD is the cost in millionths of a US dollar, if
	// CostKnown: the cost the provider reported, else the usage at the
	// price of the model that answered (see CostSource).
	CostMicroUSD uint64
	// CostKnown reports whether the cost is known: the provider reported
	// it, or the model has a price and the usage is known. Encoded as
	// null costs.
	CostKnown bool
	// CostSource says where a known cost came from (@3 only).
	CostSource CostSource
	// ProviderName names who served the call, in the catalog's words
	// ("openai", "openrouter", "deepseek", "anthropic"), from the base
	// URL's host or, for a server the catalog does not know, the model's
	// provider; "" if neither says (@3 only).
	ProviderName string
	// ProviderID is the provider's id of the response ("resp_…", "chatcmpl-…").
	ProviderID string
	// Model is the model that answered, as the provider names it (the
	// requested model if the provider names none).
	Model string
	// FinishReason says how the reply ended: "stop" (an answer),
	// "tool_calls" (the output has function calls), "refusal" (the model
	// refused), "length" (the token limit cut the output, tool calls
	// included), "content_filter" (a filter cut it), "incomplete" or
	// "incomplete: REASON" (the provider ended it early for another
	// reason), or another reason the provider gave. See FinishCut.
	FinishReason string
	// ToolCallRefs name one ToolCall node per function call, in output
	// order. Never nil.
	ToolCallRefs []cas.Ref
	// OutputItemsRef names the node holding the []OutputItem list.
	OutputItemsRef *cas.Ref
	// RequestRef names the exact request body sent on the last attempt.
	RequestRef *cas.Ref
	// ResponseRef names the response body (for a stream: the final
	// response object; for an answer Anthropic paused and the call
	// continued, its segments made one message) the receipt was made from.
	ResponseRef *cas.Ref
	// Attempts is how many HTTP attempts the call took (1 without retries;
	// each continuation of an answer Anthropic paused adds its own).
	Attempts uint64
	// FailedAttemptsRef names the node holding the []FailedAttempt list of
	// the attempts that failed before the one that answered; nil when the
	// first attempt answered.
	FailedAttemptsRef *cas.Ref
}

// FailedAttempt is one attempt of a call that failed and was retried, the
// Go form of sys/LlmFailedAttempt@1.
type FailedAttempt struct {
	// Attempt counts from 1.
	Attempt uint64 `cbor:"attempt" json:"attempt"`
	// Kind is the ProviderError kind ("http", "timeout", "connection", ...).
	Kind string `cbor:"kind" json:"kind"`
	// Status is the HTTP status, 0 if no answer arrived.
	Status uint64 `cbor:"status" json:"status"`
	// Message is the provider's message or ours, secrets removed.
	Message string `cbor:"message" json:"message"`
	// RequestID is the provider's x-request-id, if any.
	RequestID string `cbor:"request_id" json:"request_id,omitempty"`
	// WaitMS is the backoff waited before the next attempt.
	WaitMS uint64 `cbor:"wait_ms" json:"wait_ms"`
	// RequestRef and ResponseRef name the attempt's request body and raw
	// response body, when there were any.
	RequestRef  *cas.Ref `cbor:"request_ref" json:"request_ref,omitempty"`
	ResponseRef *cas.Ref `cbor:"response_ref" json:"response_ref,omitempty"`
}

// receiptCommon holds the fields every receipt version has.
type receiptCommon struct {
	OutputRef         cas.Ref   `cbor:"output_ref"`
	OutputText        string    `cbor:"output_text"`
	ProviderID        string    `cbor:"provider_id"`
	Model             string    `cbor:"model"`
	FinishReason      string    `cbor:"finish_reason"`
	ToolCallRefs      []cas.Ref `cbor:"tool_call_refs"`
	OutputItemsRef    *cas.Ref  `cbor:"output_items_ref"`
	RequestRef        *cas.Ref  `cbor:"request_ref"`
	ResponseRef       *cas.Ref  `cbor:"response_ref"`
	Attempts          uint64    `cbor:"attempts"`
	FailedAttemptsRef *cas.Ref  `cbor:"failed_attempts_ref"`
}

func (r Receipt) common() receiptCommon {
	c := receiptCommon{
		OutputRef: r.OutputRef, OutputText: r.OutputText, ProviderID: r.ProviderID, Model: r.Model,
		FinishReason: r.FinishReason, ToolCallRefs: r.ToolCallRefs, OutputItemsRef: r.OutputItemsRef,
		RequestRef: r.RequestRef, ResponseRef: r.ResponseRef, Attempts: r.Attempts, FailedAttemptsRef: r.FailedAttemptsRef,
	}
	if c.ToolCallRefs == nil {
		c.ToolCallRefs = []cas.Ref{}
	}
	return c
}

// receiptV3 is the encoded form of sys/LlmGenerateReceipt@3.
type receiptV3 struct {
	receiptCommon
	TokenUsage   *TokenUsage `cbor:"token_usage"`
	CostMicroUSD *uint64     `cbor:"cost_microusd"`
	CostSource   *CostSource `cbor:"cost_source"`
	ProviderName string      `cbor:"provider_name"`
}

// receiptV2 is the encoded form of sys/LlmGenerateReceipt@2.
type receiptV2 struct {
	receiptCommon
	TokenUsage   *tokenUsageV1 `cbor:"token_usage"`
	CostCents    *uint64       `cbor:"cost_cents"`
	CostMicroUSD *uint64       `cbor:"cost_microusd"`
}

// receiptV1 is the encoded form of sys/LlmGenerateReceipt@1.
type receiptV1 struct {
	receiptCommon
	TokenUsage   tokenUsageV1 `cbor:"token_usage"`
	CostCents    uint64       `cbor:"cost_cents"`
	CostMicroUSD uint64       `cbor:"cost_microusd"`
}

// MarshalCBOR encodes r canonically as sys/LlmGenerateReceipt@3: an
// unknown usage as a null token_usage, an unknown cost as a null
// cost_microusd and cost_source; a nil ToolCallRefs as an empty list.
func (r Receipt) MarshalCBOR() ([]byte, error) {
	v := receiptV3{receiptCommon: r.common(), ProviderName: r.ProviderName}
	if r.UsageKnown {
		u := r.TokenUsage
		v.TokenUsage = &u
	}
	if r.CostKnown {
		micro := r.CostMicroUSD
		v.CostMicroUSD = &micro
		if r.CostSource.Kind != "" {
			src := r.CostSource
			v.CostSource = &src
		}
	}
	return cas.MarshalBody(v)
}

// MarshalV2 encodes r as sys/LlmGenerateReceipt@2, for worlds whose
// manifest declares sys/llm.generate@2: the usage in the @1 shape (cache
// writes counted in prompt, not apart), no cost source, no provider name.
func (r Receipt) MarshalV2() ([]byte, error) {
	v := receiptV2{receiptCommon: r.common()}
	if r.UsageKnown {
		u := r.TokenUsage.v1()
		v.TokenUsage = &u
	}
	if r.CostKnown {
		cents, micro := r.CostCents, r.CostMicroUSD
		v.CostCents, v.CostMicroUSD = &cents, &micro
	}
	return cas.MarshalBody(v)
}

// MarshalV1 encodes r as sys/LlmGenerateReceipt@1, for worlds whose
// manifest declares sys/llm.generate@1: an unknown usage counts as 0
// tokens and an unknown cost as 0, as @1 has no way to say otherwise.
func (r Receipt) MarshalV1() ([]byte, error) {
	v := receiptV1{receiptCommon: r.common()}
	if r.UsageKnown {
		v.TokenUsage = r.TokenUsage.v1()
	}
	if r.CostKnown {
		v.CostCents, v.CostMicroUSD = r.CostCents, r.CostMicroUSD
	}
	return cas.MarshalBody(v)
}

// receiptAny decodes any receipt version: token_usage is kept raw, as its
// shape says which it is.
type receiptAny struct {
	receiptCommon
	TokenUsage   cbor.RawMessage `cbor:"token_usage"`
	CostCents    *uint64         `cbor:"cost_cents"`
	CostMicroUSD *uint64         `cbor:"cost_microusd"`
	CostSource   *CostSource     `cbor:"cost_source"`
	ProviderName string          `cbor:"provider_name"`
}

// UnmarshalCBOR decodes a sys/LlmGenerateReceipt@3 value, or an @2 or @1
// value (whose usage has the @1 shape; an @1 value's usage and cost count
// as known).
func (r *Receipt) UnmarshalCBOR(b []byte) error {
	var v receiptAny
	if err := cas.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("llm: decode receipt: %w", err)
	}
	c := v.receiptCommon
	*r = Receipt{
		OutputRef: c.OutputRef, OutputText: c.OutputText, ProviderID: c.ProviderID, Model: c.Model,
		FinishReason: c.FinishReason, ToolCallRefs: c.ToolCallRefs, OutputItemsRef: c.OutputItemsRef,
		RequestRef: c.RequestRef, ResponseRef: c.ResponseRef, Attempts: c.Attempts, FailedAttemptsRef: c.FailedAttemptsRef,
		ProviderName: v.ProviderName,
	}
	if len(v.TokenUsage) > 0 && !(len(v.TokenUsage) == 1 && v.TokenUsage[0] == 0xf6) {
		u, err := decodeTokenUsage(v.TokenUsage)
		if err != nil {
			return fmt.Errorf("llm: decode receipt: token_usage: %w", err)
		}
		r.TokenUsage, r.UsageKnown = u, true
	}
	if v.CostMicroUSD != nil {
		r.CostMicroUSD, r.CostKnown = *v.CostMicroUSD, true
		r.CostCents = CentsFromMicroUSD(r.CostMicroUSD)
		if v.CostCents != nil {
			r.CostCents = *v.CostCents
		}
	}
	if v.CostSource != nil {
		r.CostSource = *v.CostSource
	}
	return nil
}

// decodeTokenUsage decodes sys/LlmTokenUsage@2, or @1 (told apart by
// their fields).
func decodeTokenUsage(b []byte) (TokenUsage, error) {
	var m map[string]cbor.RawMessage
	if err := cas.Unmarshal(b, &m); err != nil {
		return TokenUsage{}, err
	}
	if _, v1 := m["prompt"]; v1 {
		var u tokenUsageV1
		if err := cas.Unmarshal(b, &u); err != nil {
			return TokenUsage{}, err
		}
		return u.v2(), nil
	}
	var u TokenUsage
	if err := cas.Unmarshal(b, &u); err != nil {
		return TokenUsage{}, err
	}
	return u, nil
}

// FinishCut reports whether a reply that ended with finish (a
// Receipt.FinishReason) was cut before it was complete: by its token
// limit, a content filter, or the provider ending it early. The tool
// calls of such a reply may be cut too, and are not run.
func FinishCut(finish string) bool {
	return finish == "length" || finish == "content_filter" || finish == "incomplete" || strings.HasPrefix(finish, "incomplete:")
}

// ToolCall is one function call the model asked for, the Go form of
// sys/LlmToolCall@1, stored as its own node.
type ToolCall struct {
	// CallID is the provider's call id ("call_…"), which the tool's output
	// must quote.
	CallID string `cbor:"call_id"`
	// Name is the function's name, as the model wrote it (it may name no
	// known tool).
	Name string `cbor:"name"`
	// ArgumentsJSON is the provider's argument string, never reparsed or
	// repaired: it may be invalid JSON.
	ArgumentsJSON string `cbor:"arguments_json"`
}

// variant is the canonical typed-value form of an AIR variant:
// {"$tag": T, "$value": V}, $value absent for unit arms.
type variant struct {
	Tag   string          `cbor:"$tag"`
	Value cbor.RawMessage `cbor:"$value,omitempty"`
}

// marshalVariant encodes the arm tag with value v (nil for a unit arm).
func marshalVariant(tag string, v any) ([]byte, error) {
	if v == nil {
		return cas.MarshalBody(variant{Tag: tag})
	}
	body, err := cas.MarshalBody(v)
	if err != nil {
		return nil, err
	}
	return cas.MarshalBody(variant{Tag: tag, Value: body})
}

// unmarshalVariant decodes the canonical variant form, rejecting keys other
// than $tag and $value. value is nil when $value is absent or null.
func unmarshalVariant(what string, b []byte) (tag string, value []byte, err error) {
	var m map[string]cbor.RawMessage
	if err := cas.Unmarshal(b, &m); err != nil {
		return "", nil, fmt.Errorf("%s: want a variant map {$tag, $value}: %w", what, err)
	}
	for k := range m {
		if k != "$tag" && k != "$value" {
			return "", nil, fmt.Errorf("%s: unknown key %q in variant (want $tag and $value)", what, k)
		}
	}
	rawTag, ok := m["$tag"]
	if !ok {
		return "", nil, fmt.Errorf("%s: variant has no $tag", what)
	}
	if err := cas.Unmarshal(rawTag, &tag); err != nil {
		return "", nil, fmt.Errorf("%s: $tag is not text: %w", what, err)
	}
	value = m["$value"]
	if len(value) == 1 && value[0] == 0xf6 { // null
		value = nil
	}
	return tag, value, nil
}

// decodeRecord decodes a variant arm's record value into v, rejecting
// unknown fields so a misspelt field is an error, not a silent zero.
func decodeRecord(what string, value []byte, v any, fields ...string) error {
	if value == nil {
		return fmt.Errorf("%s: missing $value", what)
	}
	var m map[string]cbor.RawMessage
	if err := cas.Unmarshal(value, &m); err != nil {
		return fmt.Errorf("%s: $value is not a record: %w", what, err)
	}
	for k := range m {
		if !slices.Contains(fields, k) {
			return fmt.Errorf("%s: unknown field %q (want %s)", what, k, strings.Join(fields, ", "))
		}
	}
	if err := cas.Unmarshal(value, v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// ToolChoiceKind is the arm of a ToolChoice.
type ToolChoiceKind string

// The arms of sys/LlmToolChoice@1.
const (
	// ToolChoiceAuto lets the model decide ("auto").
	ToolChoiceAuto ToolChoiceKind = "Auto"
	// ToolChoiceNone forbids tool calls ("none").
	ToolChoiceNone ToolChoiceKind = "None"
	// ToolChoiceRequired makes the model call at least one tool ("required").
	ToolChoiceRequired ToolChoiceKind = "Required"
	// ToolChoiceTool makes the model call the function named Name.
	ToolChoiceTool ToolChoiceKind = "Tool"
)

// ToolChoice is the Go form of sys/LlmToolChoice@1 =
// variant { Auto, None, Required, Tool{name: text} }. Its CBOR form is the
// canonical typed-value form, {"$tag":"Auto"} or
// {"$tag":"Tool","$value":{"name":"x"}}.
type ToolChoice struct {
	Kind ToolChoiceKind
	// Name is the function to call; set only for ToolChoiceTool.
	Name string
}

type toolChoiceTool struct {
	Name string `cbor:"name"`
}

// Validate reports whether c is one of the four arms, with a name exactly
// when it is ToolChoiceTool.
func (c ToolChoice) Validate() error {
	switch c.Kind {
	case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
		if c.Name != "" {
			return fmt.Errorf("tool_choice %s takes no name (got %q)", c.Kind, c.Name)
		}
		return nil
	case ToolChoiceTool:
		if c.Name == "" {
			return fmt.Errorf("tool_choice Tool needs a tool name")
		}
		return nil
	default:
		return fmt.Errorf("tool_choice %q is not one of Auto, None, Required, Tool", string(c.Kind))
	}
}

// MarshalCBOR encodes c in the canonical variant form.
func (c ToolChoice) MarshalCBOR() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("llm: encode %w", err)
	}
	if c.Kind == ToolChoiceTool {
		return marshalVariant(string(c.Kind), toolChoiceTool{Name: c.Name})
	}
	return marshalVariant(string(c.Kind), nil)
}

// UnmarshalCBOR decodes the canonical variant form.
func (c *ToolChoice) UnmarshalCBOR(b []byte) error {
	const what = "llm: decode tool_choice"
	tag, value, err := unmarshalVariant(what, b)
	if err != nil {
		return err
	}
	out := ToolChoice{Kind: ToolChoiceKind(tag)}
	switch out.Kind {
	case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
		if value != nil {
			return fmt.Errorf("%s: arm %s takes no $value", what, tag)
		}
	case ToolChoiceTool:
		var t toolChoiceTool
		if err := decodeRecord(what+" Tool", value, &t, "name"); err != nil {
			return err
		}
		out.Name = t.Name
	}
	if err := out.Validate(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	*c = out
	return nil
}

// TextFormat is the Go form of sys/LlmTextFormat@1 =
// variant { JsonSchema{name: text, schema_json: text, strict: bool} }.
type TextFormat struct {
	// JSONSchema asks for output matching a JSON Schema. It is the only
	// arm and must be set.
	JSONSchema *JSONSchemaFormat
}

// JSONSchemaFormat is the JsonSchema arm of TextFormat.
type JSONSchemaFormat struct {
	// Name names the schema for the provider (letters, digits, _ and -).
	Name string `cbor:"name"`
	// SchemaJSON is the JSON Schema as JSON text.
	SchemaJSON string `cbor:"schema_json"`
	// Strict asks the provider to enforce the schema exactly.
	Strict bool `cbor:"strict"`
}

// MarshalCBOR encodes f in the canonical variant form.
func (f TextFormat) MarshalCBOR() ([]byte, error) {
	if f.JSONSchema == nil {
		return nil, fmt.Errorf("llm: encode response_format: no arm set (want JsonSchema)")
	}
	return marshalVariant("JsonSchema", *f.JSONSchema)
}

// UnmarshalCBOR decodes the canonical variant form.
func (f *TextFormat) UnmarshalCBOR(b []byte) error {
	const what = "llm: decode response_format"
	tag, value, err := unmarshalVariant(what, b)
	if err != nil {
		return err
	}
	if tag != "JsonSchema" {
		return fmt.Errorf("%s: arm %q is not JsonSchema", what, tag)
	}
	var s JSONSchemaFormat
	if err := decodeRecord(what+" JsonSchema", value, &s, "name", "schema_json", "strict"); err != nil {
		return err
	}
	*f = TextFormat{JSONSchema: &s}
	return nil
}

// OutputItem is one item of a response's output, the Go form of
// sys/LlmOutputItem@1 = variant { Message{role, text},
// ToolCall{call_id, name, arguments_json}, Reasoning{summary: list<text>},
// Other{type, json} }. Exactly one field is set.
type OutputItem struct {
	Message   *MessageItem
	ToolCall  *ToolCall
	Reasoning *ReasoningItem
	Other     *OtherItem
}

// MessageItem is a message the model wrote.
type MessageItem struct {
	Role string `cbor:"role"`
	// Text is the concatenation of the message's output_text and refusal
	// parts.
	Text string `cbor:"text"`
}

// ReasoningItem is a reasoning item; its encrypted content stays in the
// output blob.
type ReasoningItem struct {
	// Summary holds the summary texts, in order (never nil).
	Summary []string `cbor:"summary"`
	// Text is the reasoning text itself, where the provider shows it (a
	// Chat Completions model's reasoning_content, a Responses item's
	// reasoning_text parts); nil if it shows none. An item without text
	// encodes as sys/LlmOutputItem@1 wrote it.
	Text *string `cbor:"text,omitempty"`
}

// OtherItem is an output item of any other type, kept as its raw JSON.
type OtherItem struct {
	Type string `cbor:"type"`
	JSON string `cbor:"json"`
}

// MarshalCBOR encodes it in the canonical variant form.
func (it OutputItem) MarshalCBOR() ([]byte, error) {
	n := 0
	var tag string
	var v any
	if it.Message != nil {
		n, tag, v = n+1, "Message", *it.Message
	}
	if it.ToolCall != nil {
		n, tag, v = n+1, "ToolCall", *it.ToolCall
	}
	if it.Reasoning != nil {
		r := *it.Reasoning
		if r.Summary == nil {
			r.Summary = []string{}
		}
		n, tag, v = n+1, "Reasoning", r
	}
	if it.Other != nil {
		n, tag, v = n+1, "Other", *it.Other
	}
	if n != 1 {
		return nil, fmt.Errorf("llm: encode output item: %d arms set, want exactly 1", n)
	}
	return marshalVariant(tag, v)
}

// UnmarshalCBOR decodes the canonical variant form.
func (it *OutputItem) UnmarshalCBOR(b []byte) error {
	const what = "llm: decode output item"
	tag, value, err := unmarshalVariant(what, b)
	if err != nil {
		return err
	}
	var out OutputItem
	switch tag {
	case "Message":
		out.Message = new(MessageItem)
		err = decodeRecord(what+" Message", value, out.Message, "role", "text")
	case "ToolCall":
		out.ToolCall = new(ToolCall)
		err = decodeRecord(what+" ToolCall", value, out.ToolCall, "call_id", "name", "arguments_json")
	case "Reasoning":
		out.Reasoning = new(ReasoningItem)
		err = decodeRecord(what+" Reasoning", value, out.Reasoning, "summary", "text")
		if err == nil && out.Reasoning.Summary == nil {
			out.Reasoning.Summary = []string{}
		}
	case "Other":
		out.Other = new(OtherItem)
		err = decodeRecord(what+" Other", value, out.Other, "type", "json")
	default:
		return fmt.Errorf("%s: arm %q is not one of Message, ToolCall, Reasoning, Other", what, tag)
	}
	if err != nil {
		return err
	}
	*it = out
	return nil
}

var (
	_ cbor.Marshaler   = ToolChoice{}
	_ cbor.Unmarshaler = (*ToolChoice)(nil)
	_ cbor.Marshaler   = TextFormat{}
	_ cbor.Unmarshaler = (*TextFormat)(nil)
	_ cbor.Marshaler   = OutputItem{}
	_ cbor.Unmarshaler = (*OutputItem)(nil)
	_ cbor.Marshaler   = Params{}
	_ cbor.Marshaler   = Receipt{}
	_ cbor.Unmarshaler = (*Receipt)(nil)
	_ cbor.Marshaler   = CostSource{}
	_ cbor.Unmarshaler = (*CostSource)(nil)
)
