package llm

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// EchoNone is the Model.ReasoningEcho of a provider that gets no
// reasoning back.
const EchoNone = "none"

// TokenLimitField names the Chat Completions request field that caps a
// reply's tokens. (The Responses API has one, max_output_tokens.)
type TokenLimitField string

// The token-limit fields of Chat Completions.
const (
	// MaxTokens is the original field, which every OpenAI-compatible
	// server takes but OpenAI refuses for its reasoning models.
	MaxTokens TokenLimitField = "max_tokens"
	// MaxCompletionTokens is the field OpenAI introduced for reasoning
	// models; OpenAI takes it for every model, many other servers do not.
	MaxCompletionTokens TokenLimitField = "max_completion_tokens"
)

// Model is what demiurge knows of a model: how to build a request it
// accepts, and what it costs. Its facts come in layers (see ModelFor):
// the model catalog (CatalogName) for prices, windows, output limits and
// whether it reasons; demiurge's rules (Rules) for the shape of the
// requests each family takes, and for the models the catalog lacks; the
// configuration's overrides (Config.Models, the manifest's "models",
// --model-option) last. Facts says which layer gave each fact.
type Model struct {
	// Name is the model's name as the provider takes it ("gpt-4o").
	Name string
	// Provider is the catalog's provider whose facts these are
	// ("openai", "openrouter"); "" if the catalog does not know the model.
	Provider string
	// API is the wire API that provider serves the model on:
	// ProviderResponses (OpenAI), ProviderChat (OpenAI-compatible
	// servers), "anthropic" (Anthropic's Messages API), "gemini"
	// (Google's Gemini API), or the catalog's name of another ("bedrock",
	// "google-vertex"); "" if the catalog does not know the model.
	API string
	// Reasoning says the model thinks before it answers (o-series,
	// gpt-5, DeepSeek's thinking mode).
	Reasoning bool
	// ReasoningLevels are the reasoning efforts the catalog says the
	// model takes ("low", "medium", "high"); nil if it says none.
	ReasoningLevels []string
	// ChatTokenLimit is the Chat Completions field that caps the reply.
	ChatTokenLimit TokenLimitField
	// Temperature says the model takes a temperature other than its
	// default; when false a temperature setting is not sent.
	Temperature bool
	// ReasoningEffort says the model takes reasoning.effort
	// (reasoning_effort on Chat Completions); when false it is not sent.
	ReasoningEffort bool
	// EncryptedReasoning says a stateless Responses call asks for the
	// reasoning items' encrypted content (include:
	// ["reasoning.encrypted_content"]) and sends them back on the next
	// call. OpenAI refuses the include for models that do not reason.
	EncryptedReasoning bool
	// ReasoningEcho says how a Chat Completions assistant message carries
	// the model's reasoning back to it on the next call. "" (the rule
	// that needs no table): the reasoning fields that arrived with the
	// answer go back as they arrived (reasoning_content, reasoning and
	// reasoning_details, Gemini's extra_content). A field name
	// ("reasoning_content", for DeepSeek and Kimi, which refuse a
	// tool-calling conversation without it): the same, and that field is
	// on every assistant message, set to the reasoning text ("" if it had
	// none). EchoNone: nothing goes back (a provider known to refuse the
	// fields). On the Responses API, a model with a field name gets back
	// the reasoning items that carry their text (DeepSeek's Responses
	// endpoint, which has no encrypted content).
	ReasoningEcho string
	// ReasoningRefused are reasoning fields never sent back, whatever
	// arrived: those the server is known to refuse in a message.
	ReasoningRefused []string
	// ContextWindow is the most tokens a request and its reply may hold
	// together; 0 if unknown.
	ContextWindow uint64
	// MaxOutputTokens is the most tokens one reply may hold; 0 if
	// unknown. A larger max_tokens setting is sent as this.
	MaxOutputTokens uint64
	// Price is what the model costs; nil if unknown (the receipt then
	// says the cost is unknown, never 0).
	Price *Price
	// CompactAt and OnOverflow say what a chat does when its next request
	// would fill more than CompactAt percent of the window: "compact" (a
	// model call summarizes the oldest part of the transcript) or "fail"
	// (the turn ends, saying so). Zero values: the chat's defaults (80,
	// compact). Neither the catalog nor the rules set them; overrides may.
	CompactAt  uint64
	OnOverflow string
	// Source lists where the request rules came from (demiurge's rules'
	// public pages, an override), and AsOf the day demiurge's rules were
	// last checked against them (YYYY-MM-DD).
	Source, AsOf string
	// Facts says where each fact came from.
	Facts FactSources
}

// FactSources says where each of a Model's facts came from: the catalog
// (CatalogName and the provider, "catwalk v0.52.1 (openai)"), demiurge's
// rules ("demiurge's rules"), the configuration ("the configuration
// (gpt-5*)"), or "" if nothing gave it.
type FactSources struct {
	Price, ContextWindow, MaxOutputTokens, Reasoning string
}

// PriceSource says where m's price came from.
func (m Model) PriceSource() string {
	if m.Facts.Price == "" {
		return "demiurge's rules"
	}
	return m.Facts.Price
}

// usd converts dollars per million tokens to the micro-USD of a Price.
func usd(dollars float64) uint64 { return uint64(math.Round(dollars * 1e6)) }

// price is a Price in dollars per million tokens.
func price(input, cached, output float64) *Price {
	return &Price{Input: usd(input), CachedInput: usd(cached), Output: usd(output)}
}

// Sources of demiurge's rules.
const (
	srcOpenAIModels  = "https://platform.openai.com/docs/models"
	srcOpenAIPricing = "https://platform.openai.com/docs/pricing"
	srcOpenAIReason  = "https://platform.openai.com/docs/guides/reasoning"
	srcDeepSeek      = "https://api-docs.deepseek.com/quick_start/pricing"
	srcDeepSeekThink = "https://api-docs.deepseek.com/guides/thinking_mode"
	srcKimi          = "https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model"
	srcGLM           = "https://docs.z.ai/guides/capabilities/thinking-mode"
	srcXAI           = "https://docs.x.ai/docs/guides/reasoning"
)

func ptr[T any](v T) *T { return &v }

// openAIChat is the rule of OpenAI's models that do not reason: they take
// max_completion_tokens (and max_tokens), a temperature, and no
// reasoning settings.
func openAIChat(match string) ModelOptions {
	return ModelOptions{Match: match, Reasoning: ptr(false), ChatTokenLimit: ptr(MaxCompletionTokens), Temperature: ptr(true),
		ReasoningEffort: ptr(false), EncryptedReasoning: ptr(false), ReasoningEcho: ptr(""),
		Source: srcOpenAIModels + "; " + srcOpenAIPricing, AsOf: "2026-11-29"}
}

// openAIReasoning is the rule of OpenAI's reasoning models:
// max_completion_tokens on Chat Completions, no temperature, a reasoning
// effort, and encrypted reasoning on stateless Responses calls.
func openAIReasoning(match string) ModelOptions {
	return ModelOptions{Match: match, Reasoning: ptr(true), ChatTokenLimit: ptr(MaxCompletionTokens), Temperature: ptr(false),
		ReasoningEffort: ptr(true), EncryptedReasoning: ptr(true), ReasoningEcho: ptr(""),
		Source: srcOpenAIModels + "; " + srcOpenAIReason, AsOf: "2026-11-29"}
}

// facts adds a model's window, output limit and price to a rule, for the
// models the catalog does not know.
func facts(o ModelOptions, window, maxOut uint64, p *Price) ModelOptions {
	o.ContextWindow, o.MaxOutputTokens, o.Price = &window, &maxOut, p
	return o
}

// Rules are demiurge's own rules of the model families: the request
// shape each takes (which token-limit field, whether a temperature, a
// reasoning effort, encrypted reasoning, how reasoning goes back), and the
// facts of the models the catalog lacks. A rule's Match is a name, or a
// pattern where "*" stands for any text; every rule that matches a model
// applies, the least specific first (the fewest letters outside "*"),
// over the catalog's facts: a rule's window and price fill only what the
// catalog does not give, its output limit raises the catalog's (which is
// the default output of the catalog's client, below the model's limit for
// some), its request shape always applies.
// A model's dated snapshot ("gpt-4o-2024-08-06") takes the rules of its
// name.
var Rules = []ModelOptions{
	// OpenAI. Its chat models, then its reasoning models; the
	// *-chat-latest models of the gpt-5 line do not reason (OpenAI
	// answers a Responses request for one that asks for encrypted
	// reasoning with 400 "Encrypted content is not supported").
	openAIChat("gpt-*"),
	openAIChat("chatgpt-*"),
	facts(openAIChat("gpt-3.5*"), 16_385, 4_096, nil),
	facts(openAIChat("gpt-4o*"), 128_000, 16_384, nil),
	facts(openAIChat("gpt-4.1*"), 1_047_576, 32_768, nil),
	openAIReasoning("gpt-5*"),
	openAIReasoning("o1*"),
	openAIReasoning("o3*"),
	openAIReasoning("o4*"),
	facts(openAIReasoning("o1"), 200_000, 100_000, price(15.00, 7.50, 60.00)),
	facts(openAIChat("gpt-5*-chat*"), 128_000, 16_384, nil),
	facts(openAIChat("gpt-5-chat-latest"), 128_000, 16_384, price(1.25, 0.125, 10.00)),
	facts(openAIChat("gpt-5.1-chat-latest"), 128_000, 16_384, price(1.25, 0.125, 10.00)),
	facts(openAIChat("gpt-5.2-chat-latest"), 128_000, 16_384, price(1.75, 0.175, 14.00)),

	// DeepSeek (Chat Completions at https://api.deepseek.com): max_tokens,
	// and its thinking mode refuses a conversation with tool calls whose
	// assistant messages lack their reasoning_content. deepseek-chat and
	// deepseek-reasoner are retired names that DeepSeek still answers
	// (as deepseek-v4-flash, whose price the receipt then takes); the
	// catalog has the deepseek-v4 models.
	{Match: "deepseek-*", ChatTokenLimit: ptr(MaxTokens), Temperature: ptr(true), ReasoningEcho: ptr("reasoning_content"),
		Source: srcDeepSeek + "; " + srcDeepSeekThink, AsOf: "2026-11-29"},
	facts(ModelOptions{Match: "deepseek-chat", Reasoning: ptr(false), ReasoningEffort: ptr(false), Source: srcDeepSeek, AsOf: "2025-12-01"}, 128_000, 8_192, price(0.28, 0.028, 0.42)),
	facts(ModelOptions{Match: "deepseek-reasoner", Reasoning: ptr(true), Temperature: ptr(false), ReasoningEffort: ptr(false), Source: srcDeepSeek, AsOf: "2025-12-01"},
		128_000, 65_536, price(0.28, 0.028, 0.42)),

	// Moonshot's Kimi: max_tokens; a thinking turn must carry its
	// reasoning_content back (Kimi K2.5 refuses a follow-up without it
	// with 400), and the thinking models take no temperature but their
	// own.
	{Match: "kimi-*", ChatTokenLimit: ptr(MaxTokens), ReasoningEcho: ptr("reasoning_content"), Source: srcKimi, AsOf: "2026-11-29"},
	{Match: "kimi-k2.5*", Temperature: ptr(false), Source: srcKimi, AsOf: "2026-11-29"},
	{Match: "kimi-k2.6*", Temperature: ptr(false), Source: srcKimi, AsOf: "2026-11-29"},
	{Match: "kimi-k2.7*", Temperature: ptr(false), Source: srcKimi, AsOf: "2026-11-29"},
	{Match: "kimi-k3*", Temperature: ptr(false), Source: srcKimi, AsOf: "2026-11-29"},
	{Match: "kimi-*-thinking*", Temperature: ptr(false), Source: srcKimi, AsOf: "2026-11-29"},

	// Z.ai's GLM: max_tokens; its preserved thinking takes the
	// reasoning_content of earlier turns back.
	{Match: "glm-*", ChatTokenLimit: ptr(MaxTokens), ReasoningEcho: ptr("reasoning_content"), Source: srcGLM, AsOf: "2026-11-29"},

	// xAI's Grok: max_tokens; a reasoning effort only where the catalog
	// lists reasoning levels (grok-4 refuses one).
	{Match: "grok-*", ChatTokenLimit: ptr(MaxTokens), Source: srcXAI, AsOf: "2026-11-29"},
}

// UnknownModel is the capability of a model neither the catalog nor the
// rules know (an open model on Ollama, vLLM or llama.cpp, say), chosen so
// that no server refuses the request for its shape: the settings a user
// gives (temperature, reasoning effort) are sent as given; nothing else
// is added — no encrypted reasoning; the reply is capped with max_tokens,
// which every OpenAI-compatible server takes (max_completion_tokens on
// OpenAI's and Azure's endpoints, which take it for every model and
// refuse max_tokens for reasoning ones). Its window and price are
// unknown: its calls' cost is unknown; they are never refused.
func UnknownModel(name, baseURL string) Model {
	m := Model{Name: name, ChatTokenLimit: MaxTokens, Temperature: true, ReasoningEffort: true,
		Source: "demiurge's conservative default for a model it does not know"}
	if isOpenAIHost(baseURL) {
		m.ChatTokenLimit = MaxCompletionTokens
	}
	return m
}

// isOpenAIHost reports whether baseURL is OpenAI's API or an Azure OpenAI
// resource.
func isOpenAIHost(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return h == "api.openai.com" || isAzureHost(h)
}

// isAzureHost reports whether h is the host of an Azure OpenAI resource.
func isAzureHost(h string) bool {
	for _, s := range []string{".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"} {
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

var datedSnapshot = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$`) })

// glob reports whether name matches pattern, where "*" stands for any
// text (slashes included).
func glob(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return len(name) >= len(last) && strings.HasSuffix(name, last)
}

// MatchName reports whether a model name matches pattern, where "*"
// stands for any text, as a ModelOptions.Match does.
func MatchName(pattern, name string) bool { return glob(pattern, name) }

// specificity is how many letters of a pattern are not "*".
func specificity(pattern string) int { return len(pattern) - strings.Count(pattern, "*") }

// rulesFor returns the rules that match name, the least specific first.
func rulesFor(rules []ModelOptions, name string) []ModelOptions {
	var out []ModelOptions
	for _, r := range rules {
		if r.matches(name) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b ModelOptions) int { return specificity(a.Match) - specificity(b.Match) })
	return out
}

// ModelOptions say something of the models whose names match Match (a
// name, or a pattern where "*" stands for any text: "qwen3*"): demiurge's
// Rules, or the configuration's overrides of what the catalog and the
// rules say, or a description of a model neither knows. Nil fields say
// nothing.
type ModelOptions struct {
	Match string
	// Source and AsOf say where a rule came from (public pages) and when
	// it was checked; "" for the configuration's overrides.
	Source, AsOf       string
	Reasoning          *bool
	ChatTokenLimit     *TokenLimitField
	Temperature        *bool
	ReasoningEffort    *bool
	EncryptedReasoning *bool
	ReasoningEcho      *string
	ContextWindow      *uint64
	MaxOutputTokens    *uint64
	Price              *Price
	CompactAt          *uint64
	OnOverflow         *string
}

// matches reports whether o applies to the model name (or its undated
// name).
func (o ModelOptions) matches(name string) bool {
	return glob(o.Match, name) || glob(o.Match, datedSnapshot().ReplaceAllString(name, ""))
}

// apply sets o's fields on m: an override's, every one it sets; a rule's
// (rule), its request shape, and the facts m does not have yet.
func (o ModelOptions) apply(m *Model, rule bool) {
	from := "the configuration (" + o.Match + ")"
	if rule {
		from = "demiurge's rules (" + o.Match + ")"
	}
	set := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	if o.Reasoning != nil {
		m.Reasoning, m.Facts.Reasoning = *o.Reasoning, from
	}
	set(&m.Temperature, o.Temperature)
	set(&m.ReasoningEffort, o.ReasoningEffort)
	set(&m.EncryptedReasoning, o.EncryptedReasoning)
	if o.ChatTokenLimit != nil {
		m.ChatTokenLimit = *o.ChatTokenLimit
	}
	if o.ReasoningEcho != nil {
		m.ReasoningEcho = *o.ReasoningEcho
	}
	if o.ContextWindow != nil && (!rule || m.ContextWindow == 0) {
		m.ContextWindow, m.Facts.ContextWindow = *o.ContextWindow, from
	}
	if o.MaxOutputTokens != nil && (!rule || m.MaxOutputTokens < *o.MaxOutputTokens) {
		m.MaxOutputTokens, m.Facts.MaxOutputTokens = *o.MaxOutputTokens, from
	}
	if o.Price != nil && (!rule || m.Price == nil) {
		p := *o.Price
		m.Price, m.Facts.Price = &p, from
	}
	if o.CompactAt != nil {
		m.CompactAt = *o.CompactAt
	}
	if o.OnOverflow != nil {
		m.OnOverflow = *o.OnOverflow
	}
	src := "overridden by the configuration (" + o.Match + ")"
	if rule {
		src, m.AsOf = o.Source, o.AsOf
	}
	if m.Source != "" && src != "" && !strings.Contains(m.Source, src) {
		src = m.Source + "; " + src
	}
	if src != "" {
		m.Source = src
	}
}

// ModelOptionKeys are the keys SetOption takes, in the order the docs list
// them.
var ModelOptionKeys = []string{"reasoning", "chat_token_limit", "temperature", "reasoning_effort",
	"encrypted_reasoning", "reasoning_echo", "context_window", "max_output_tokens",
	"price_input", "price_cached_input", "price_cache_write", "price_output", "compact_at", "on_overflow"}

// SetOption sets one option from its text form, as the command line and
// the manifest give it: booleans "true"/"false"; chat_token_limit
// "max_tokens" or "max_completion_tokens"; reasoning_echo a field name
// ("reasoning_content") set on every assistant message, "none" to send no
// reasoning back, or "" to send back the fields that arrived (see
// Model.ReasoningEcho); context_window and
// max_output_tokens a number of tokens; price_* US dollars per million
// tokens ("1.25"); compact_at a share of the window in percent;
// on_overflow "compact" or "fail". Setting one price sets the others to 0
// unless they are set too.
func (o *ModelOptions) SetOption(key, value string) error {
	boolOpt := func(dst **bool) error {
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("model option %s=%q: want true or false", key, value)
		}
		*dst = &b
		return nil
	}
	natOpt := func(dst **uint64) error {
		n, err := strconv.ParseUint(strings.ReplaceAll(value, "_", ""), 10, 64)
		if err != nil {
			return fmt.Errorf("model option %s=%q: want a number of tokens", key, value)
		}
		*dst = &n
		return nil
	}
	priceOpt := func(set func(p *Price, v uint64)) error {
		d, err := strconv.ParseFloat(value, 64)
		if err != nil || d < 0 || math.IsInf(d, 0) || math.IsNaN(d) || d > 1e6 {
			return fmt.Errorf("model option %s=%q: want US dollars per million tokens, such as 1.25", key, value)
		}
		if o.Price == nil {
			o.Price = &Price{}
		}
		set(o.Price, usd(d))
		return nil
	}
	switch key {
	case "reasoning":
		return boolOpt(&o.Reasoning)
	case "temperature":
		return boolOpt(&o.Temperature)
	case "reasoning_effort":
		return boolOpt(&o.ReasoningEffort)
	case "encrypted_reasoning":
		return boolOpt(&o.EncryptedReasoning)
	case "chat_token_limit":
		f := TokenLimitField(value)
		if f != MaxTokens && f != MaxCompletionTokens {
			return fmt.Errorf("model option chat_token_limit=%q: want %s or %s", value, MaxTokens, MaxCompletionTokens)
		}
		o.ChatTokenLimit = &f
	case "reasoning_echo":
		if value != "" && !regexp.MustCompile(`^[a-z_]+$`).MatchString(value) {
			return fmt.Errorf("model option reasoning_echo=%q: want the name of the message field, such as reasoning_content; none to send no reasoning back; or nothing to send back what arrived", value)
		}
		o.ReasoningEcho = &value
	case "context_window":
		return natOpt(&o.ContextWindow)
	case "max_output_tokens":
		return natOpt(&o.MaxOutputTokens)
	case "price_input":
		return priceOpt(func(p *Price, v uint64) { p.Input = v })
	case "price_cached_input":
		return priceOpt(func(p *Price, v uint64) { p.CachedInput = v })
	case "price_cache_write":
		return priceOpt(func(p *Price, v uint64) { p.CacheWrite = v })
	case "price_output":
		return priceOpt(func(p *Price, v uint64) { p.Output = v })
	case "compact_at":
		if err := natOpt(&o.CompactAt); err != nil {
			return err
		}
		if *o.CompactAt == 0 || *o.CompactAt > 100 {
			return fmt.Errorf("model option compact_at=%q: want a share of the window in percent, 1 to 100", value)
		}
	case "on_overflow":
		if value != "compact" && value != "fail" {
			return fmt.Errorf("model option on_overflow=%q: want compact or fail", value)
		}
		o.OnOverflow = &value
	default:
		return fmt.Errorf("unknown model option %q (known: %s)", key, strings.Join(ModelOptionKeys, ", "))
	}
	return nil
}

// ParseModelOption parses "KEY=VALUE" into o (see SetOption).
func (o *ModelOptions) ParseModelOption(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("model option %q: want KEY=VALUE, such as reasoning=true (keys: %s)", kv, strings.Join(ModelOptionKeys, ", "))
	}
	return o.SetOption(strings.TrimSpace(k), strings.TrimSpace(v))
}

// ModelFor returns what the generator knows of the model name (see
// ResolveModel) at its base URL, with Config.Models over it. known
// reports whether the catalog, a rule or an override named the model.
func (g *Generator) ModelFor(name string) (m Model, known bool) {
	return resolveModelAt(g.server(), name, g.cfg.BaseURL, g.cfg.Models)
}

// ResolveModel says what is known of the model name served at baseURL
// ("" for a server demiurge does not know), in layers: the catalog's
// entry of the model (the server's provider's if the catalog knows the
// server, else the model's own provider's; see CatalogName), then
// demiurge's Rules that match it, the least specific first, then each
// override that matches it, in order. A model nothing knows gets
// UnknownModel and known false: its calls are made, their cost unknown.
func ResolveModel(name, baseURL string, overrides []ModelOptions) (Model, bool) {
	return resolveModel(name, baseURL, overrides)
}

// resolveModel is ResolveModel.
func resolveModel(name, baseURL string, overrides []ModelOptions) (Model, bool) {
	return resolveModelAt(serverProvider(baseURL), name, baseURL, overrides)
}

// resolveModelAt is ResolveModel for a server whose catalog provider is
// server ("" if unknown).
func resolveModelAt(server, name, baseURL string, overrides []ModelOptions) (Model, bool) {
	m := UnknownModel(name, baseURL)
	known := false
	if e, ok := theCatalog().lookup(server, name); ok {
		m.applyCatalog(e)
		known = true
	}
	for _, r := range rulesFor(Rules, name) {
		r.apply(&m, true)
		known = true
	}
	if s, ok := serverByProvider(server); ok {
		if s.echo != "" {
			m.ReasoningEcho = s.echo
		}
		m.ReasoningRefused = s.refuses
	}
	for _, o := range overrides {
		if o.matches(name) {
			o.apply(&m, false)
			known = true
		}
	}
	m.Name = name
	return m, known
}

// applyCatalog sets the catalog's facts of a model on m: its provider,
// price, window, output limit, and whether it reasons (a model that
// reasons takes a reasoning effort, one that does not takes none).
func (m *Model) applyCatalog(e *catalogEntry) {
	from := CatalogName + " (" + e.provider + ")"
	m.Provider, m.API = e.provider, apiOf(e.kind)
	if e.price != nil {
		p := *e.price
		m.Price, m.Facts.Price = &p, from
	}
	if e.window > 0 {
		m.ContextWindow, m.Facts.ContextWindow = e.window, from
	}
	if e.maxOut > 0 {
		m.MaxOutputTokens, m.Facts.MaxOutputTokens = e.maxOut, from
	}
	m.Reasoning, m.Facts.Reasoning = e.reason, from
	m.ReasoningLevels = slices.Clone(e.levels)
	m.ReasoningEffort = e.reason
	m.Source = "the model catalog, " + CatalogName
}

// ModelNames returns the names of the models demiurge's rules name
// (not their patterns), sorted.
func ModelNames() []string {
	var out []string
	for _, r := range Rules {
		if !strings.Contains(r.Match, "*") {
			out = append(out, r.Match)
		}
	}
	slices.Sort(out)
	return out
}
