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
// accepts, and what it costs. The built-in table (Models) holds the models
// in common use; Config.Models overrides any field of any model, or adds
// one (see ModelOptions).
type Model struct {
	// Name is the model's name as the provider takes it ("gpt-4o"). A
	// name ending in "*" is a family: it matches every model that starts
	// with the rest, and gives capabilities but never a price.
	Name string
	// Reasoning says the model thinks before it answers (o-series,
	// gpt-5, DeepSeek's thinking mode).
	Reasoning bool
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
	// ReasoningEcho is the field of a Chat Completions assistant message
	// that carries the model's reasoning text back to it on the next call
	// ("reasoning_content" for DeepSeek, which refuses a tool-calling
	// conversation without it); "" sends no reasoning back. On the
	// Responses API, a model with a ReasoningEcho gets back the reasoning
	// items that carry their text (DeepSeek's Responses endpoint, which
	// has no encrypted content).
	ReasoningEcho string
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
	// compact). The table sets neither; overrides may.
	CompactAt  uint64
	OnOverflow string
	// Source is the public page the facts were read from, and AsOf the
	// day they were read (YYYY-MM-DD).
	Source, AsOf string
	// PriceFrom says where Price came from, as a receipt's CostSource
	// names it: "demiurge's model table", or "the configuration" for an
	// override.
	PriceFrom string
}

// PriceSource says where m's price came from.
func (m Model) PriceSource() string {
	if m.PriceFrom == "" {
		return "demiurge's model table"
	}
	return m.PriceFrom
}

// usd converts dollars per million tokens to the micro-USD of a Price.
func usd(dollars float64) uint64 { return uint64(math.Round(dollars * 1e6)) }

// price is a Price in dollars per million tokens.
func price(input, cached, output float64) *Price {
	return &Price{Input: usd(input), CachedInput: usd(cached), Output: usd(output)}
}

// Sources of the table's facts.
const (
	srcOpenAIModels  = "https://platform.openai.com/docs/models"
	srcOpenAIPricing = "https://platform.openai.com/docs/pricing"
	srcOpenAIReason  = "https://platform.openai.com/docs/guides/reasoning"
	srcDeepSeek      = "https://api-docs.deepseek.com/quick_start/pricing"
	srcDeepSeekThink = "https://api-docs.deepseek.com/guides/thinking_mode"
	srcClaudeModels  = "https://platform.claude.com/docs/en/about-claude/models/overview"
	srcClaudePricing = "https://platform.claude.com/docs/en/about-claude/pricing"
	srcGeminiModels  = "https://ai.google.dev/gemini-api/docs/models"
	srcGeminiPricing = "https://ai.google.dev/gemini-api/docs/pricing"
)

// claude is an Anthropic model on the Messages API (API version
// 2026-10-21, which takes no temperature): it reasons (extended or
// adaptive thinking, with an effort), and caches the prompt with cache
// writes priced apart (1.25× the input price for the 5-minute cache).
// Its price is US dollars per million tokens: input, cache read, cache
// write, output.
func claude(name string, window, maxOut uint64, input, read, write, output float64) Model {
	m := Model{Name: name, Reasoning: true, ChatTokenLimit: MaxTokens, ReasoningEffort: true,
		ContextWindow: window, MaxOutputTokens: maxOut,
		Source: srcClaudeModels + "; " + srcClaudePricing, AsOf: "2026-11-29"}
	if !strings.HasSuffix(name, "*") {
		m.Price = &Price{Input: usd(input), CachedInput: usd(read), CacheWrite: usd(write), Output: usd(output)}
	}
	return m
}

// gemini is a Google Gemini model on the Gemini API that thinks (thinking
// level or budget) and takes a temperature.
func gemini(name string, window, maxOut uint64, p *Price) Model {
	return Model{Name: name, Reasoning: true, ChatTokenLimit: MaxTokens, Temperature: true, ReasoningEffort: true,
		ContextWindow: window, MaxOutputTokens: maxOut, Price: p,
		Source: srcGeminiModels + "; " + srcGeminiPricing, AsOf: "2026-11-29"}
}

// openAIChat is an OpenAI model that does not reason: it takes max_tokens
// (and max_completion_tokens), a temperature, and no reasoning settings.
func openAIChat(name string, window, maxOut uint64, p *Price) Model {
	return Model{Name: name, ChatTokenLimit: MaxCompletionTokens, Temperature: true,
		ContextWindow: window, MaxOutputTokens: maxOut, Price: p,
		Source: srcOpenAIModels + "/" + strings.TrimSuffix(name, "*") + "; " + srcOpenAIPricing, AsOf: "2025-11-20"}
}

// openAIReasoning is an OpenAI reasoning model: max_completion_tokens on
// Chat Completions, no temperature, reasoning effort, and encrypted
// reasoning on stateless Responses calls.
func openAIReasoning(name string, window, maxOut uint64, p *Price) Model {
	return Model{Name: name, Reasoning: true, ChatTokenLimit: MaxCompletionTokens, ReasoningEffort: true,
		EncryptedReasoning: true, ContextWindow: window, MaxOutputTokens: maxOut, Price: p,
		Source: srcOpenAIModels + "/" + strings.TrimSuffix(name, "*") + "; " + srcOpenAIReason + "; " + srcOpenAIPricing, AsOf: "2025-11-20"}
}

// Models is the built-in capability and price table, one entry a model
// and a few families. Prices are US dollars per million tokens at the
// standard tier; a model's dated snapshots ("gpt-4o-2024-08-06") take
// the entry of its name.
var Models = []Model{
	// OpenAI, models that do not reason.
	openAIChat("gpt-4o", 128_000, 16_384, price(2.50, 1.25, 10.00)),
	openAIChat("gpt-4o-mini", 128_000, 16_384, price(0.15, 0.075, 0.60)),
	openAIChat("gpt-4.1", 1_047_576, 32_768, price(2.00, 0.50, 8.00)),
	openAIChat("gpt-4.1-mini", 1_047_576, 32_768, price(0.40, 0.10, 1.60)),
	openAIChat("gpt-4.1-nano", 1_047_576, 32_768, price(0.10, 0.025, 0.40)),
	openAIChat("gpt-4o*", 128_000, 16_384, nil),
	openAIChat("gpt-4.1*", 1_047_576, 32_768, nil),
	openAIChat("gpt-4*", 0, 0, nil),
	openAIChat("gpt-3.5*", 16_385, 4_096, nil),

	// OpenAI reasoning models.
	openAIReasoning("o1", 200_000, 100_000, price(15.00, 7.50, 60.00)),
	openAIReasoning("o3", 200_000, 100_000, price(2.00, 0.50, 8.00)),
	openAIReasoning("o3-mini", 200_000, 100_000, price(1.10, 0.55, 4.40)),
	openAIReasoning("o4-mini", 200_000, 100_000, price(1.10, 0.275, 4.40)),
	openAIReasoning("gpt-5", 400_000, 128_000, price(1.25, 0.125, 10.00)),
	openAIReasoning("gpt-5-mini", 400_000, 128_000, price(0.25, 0.025, 2.00)),
	openAIReasoning("gpt-5-nano", 400_000, 128_000, price(0.05, 0.005, 0.40)),
	openAIReasoning("gpt-5.1", 400_000, 128_000, price(1.25, 0.125, 10.00)),
	openAIReasoning("o1*", 200_000, 100_000, nil),
	openAIReasoning("o3*", 200_000, 100_000, nil),
	openAIReasoning("o4*", 200_000, 100_000, nil),
	openAIReasoning("gpt-5*", 400_000, 128_000, nil),

	// DeepSeek (Chat Completions at https://api.deepseek.com). Both names
	// serve the same model, deepseek-reasoner in thinking mode, which
	// refuses a conversation with tool calls whose assistant messages
	// lack their reasoning_content; both take max_tokens.
	{Name: "deepseek-chat", ChatTokenLimit: MaxTokens, Temperature: true, ReasoningEcho: "reasoning_content",
		ContextWindow: 128_000, MaxOutputTokens: 8_192, Price: price(0.28, 0.028, 0.42),
		Source: srcDeepSeek + "; " + srcDeepSeekThink, AsOf: "2025-12-01"},
	{Name: "deepseek-reasoner", Reasoning: true, ChatTokenLimit: MaxTokens, ReasoningEcho: "reasoning_content",
		ContextWindow: 128_000, MaxOutputTokens: 65_536, Price: price(0.28, 0.028, 0.42),
		Source: srcDeepSeek + "; " + srcDeepSeekThink, AsOf: "2025-12-01"},
	// DeepSeek's other names (deepseek-v4-flash, which also answers for
	// the two above): the same rules, prices unknown.
	{Name: "deepseek-*", ChatTokenLimit: MaxTokens, Temperature: true, ReasoningEcho: "reasoning_content",
		Source: srcDeepSeek + "; " + srcDeepSeekThink, AsOf: "2025-12-01"},

	// Anthropic (the Messages API, --llm anthropic): each model's page
	// (platform.claude.com/docs/en/models/NAME/overview) gives its window,
	// output limit and price; a cache read costs 0.1× the input price, a
	// 5-minute cache write 1.25×.
	claude("claude-fable-5-2", 1_000_000, 128_000, 8, 0.80, 10, 40),
	claude("claude-fable-5-1", 1_000_000, 128_000, 10, 1, 12.5, 50),
	claude("claude-fable-5", 1_000_000, 128_000, 10, 1, 12.5, 50),
	claude("claude-opus-5-5", 1_000_000, 128_000, 4, 0.40, 5, 20),
	claude("claude-opus-5", 1_000_000, 128_000, 5, 0.50, 6.25, 25),
	claude("claude-sonnet-5-5", 1_000_000, 128_000, 2, 0.20, 2.5, 10),
	claude("claude-sonnet-5", 1_000_000, 128_000, 2, 0.20, 2.5, 10),
	claude("claude-opus-4-8", 1_000_000, 128_000, 5, 0.50, 6.25, 25),
	claude("claude-opus-4-6", 1_000_000, 128_000, 5, 0.50, 6.25, 25),
	claude("claude-sonnet-4-6", 1_000_000, 128_000, 3, 0.30, 3.75, 15),
	claude("claude-opus-4-5", 200_000, 64_000, 5, 0.50, 6.25, 25),
	claude("claude-sonnet-4-5", 200_000, 64_000, 3, 0.30, 3.75, 15),
	claude("claude-haiku-4-5", 200_000, 64_000, 1, 0.10, 1.25, 5),
	claude("claude-*", 200_000, 64_000, 0, 0, 0, 0),

	// Google Gemini (the Gemini API, --llm gemini). Prices at the
	// standard tier for prompts up to 200K tokens.
	gemini("gemini-3.5-flash", 1_048_576, 65_536, price(1.50, 0.15, 9)),
	gemini("gemini-3.5-flash-lite", 1_048_576, 65_536, price(0.30, 0.03, 2.50)),
	gemini("gemini-3.1-pro-preview", 1_048_576, 65_536, price(2, 0.20, 12)),
	gemini("gemini-3-pro-preview", 1_048_576, 65_536, price(2, 0.20, 12)),
	gemini("gemini-3-flash-preview", 1_048_576, 65_536, price(0.50, 0.05, 3)),
	gemini("gemini-2.5-pro", 1_048_576, 65_536, price(1.25, 0.125, 10)),
	gemini("gemini-2.5-flash", 1_048_576, 65_536, price(0.30, 0.03, 2.50)),
	gemini("gemini-2.5-flash-lite", 1_048_576, 65_536, price(0.10, 0.01, 0.40)),
	gemini("gemini-3*", 1_048_576, 65_536, nil),
	gemini("gemini-2.5*", 1_048_576, 65_536, nil),
	// Older Gemini models do not think.
	{Name: "gemini-*", ChatTokenLimit: MaxTokens, Temperature: true,
		Source: srcGeminiModels, AsOf: "2026-11-29"},
}

// UnknownModel is the capability of a model the table does not know (an
// open model on Ollama, vLLM or llama.cpp, say), chosen so that no server
// refuses the request for its shape: the settings a user gives
// (temperature, reasoning effort) are sent as given; nothing else is
// added — no encrypted reasoning, no reasoning sent back; the reply is
// capped with max_tokens, which every OpenAI-compatible server takes
// (max_completion_tokens on OpenAI's and Azure's endpoints, which take it
// for every model and refuse max_tokens for reasoning ones). Its window
// and price are unknown.
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

// lookupModel finds name in table: the entry of that name, else the entry
// of its undated name ("gpt-4o-2024-08-06" → "gpt-4o"), else the longest
// family ("gpt-5*") it belongs to.
func lookupModel(table []Model, name string) (Model, bool) {
	for _, n := range []string{name, datedSnapshot().ReplaceAllString(name, "")} {
		for _, m := range table {
			if m.Name == n {
				return m, true
			}
		}
	}
	best, found := Model{}, false
	for _, m := range table {
		fam, ok := strings.CutSuffix(m.Name, "*")
		if ok && strings.HasPrefix(name, fam) && (!found || len(m.Name) > len(best.Name)) {
			best, found = m, true
		}
	}
	return best, found
}

// ModelOptions override what the table says of the models whose names
// match Match (a name, or a family ending in "*"), or describe a model it
// does not know. Nil fields keep the table's value.
type ModelOptions struct {
	Match              string
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

// matches reports whether o applies to the model name.
func (o ModelOptions) matches(name string) bool {
	if fam, ok := strings.CutSuffix(o.Match, "*"); ok {
		return strings.HasPrefix(name, fam)
	}
	return o.Match == name || o.Match == datedSnapshot().ReplaceAllString(name, "")
}

// apply sets o's fields on m.
func (o ModelOptions) apply(m *Model) {
	set := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	set(&m.Reasoning, o.Reasoning)
	set(&m.Temperature, o.Temperature)
	set(&m.ReasoningEffort, o.ReasoningEffort)
	set(&m.EncryptedReasoning, o.EncryptedReasoning)
	if o.ChatTokenLimit != nil {
		m.ChatTokenLimit = *o.ChatTokenLimit
	}
	if o.ReasoningEcho != nil {
		m.ReasoningEcho = *o.ReasoningEcho
	}
	if o.ContextWindow != nil {
		m.ContextWindow = *o.ContextWindow
	}
	if o.MaxOutputTokens != nil {
		m.MaxOutputTokens = *o.MaxOutputTokens
	}
	if o.Price != nil {
		p := *o.Price
		m.Price = &p
		m.PriceFrom = "the configuration (" + o.Match + ")"
	}
	if o.CompactAt != nil {
		m.CompactAt = *o.CompactAt
	}
	if o.OnOverflow != nil {
		m.OnOverflow = *o.OnOverflow
	}
	if m.Source != "" {
		m.Source += "; "
	}
	m.Source += "overridden by the configuration (" + o.Match + ")"
}

// ModelOptionKeys are the keys SetOption takes, in the order the docs list
// them.
var ModelOptionKeys = []string{"reasoning", "chat_token_limit", "temperature", "reasoning_effort",
	"encrypted_reasoning", "reasoning_echo", "context_window", "max_output_tokens",
	"price_input", "price_cached_input", "price_output", "compact_at", "on_overflow"}

// SetOption sets one option from its text form, as the command line and
// the manifest give it: booleans "true"/"false"; chat_token_limit
// "max_tokens" or "max_completion_tokens"; reasoning_echo a field name
// ("reasoning_content", "reasoning") or "" for none; context_window and
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
			return fmt.Errorf("model option reasoning_echo=%q: want the name of the message field, such as reasoning_content, or nothing", value)
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

// ModelFor returns what the generator knows of the model name: the
// built-in table's entry (Models), or UnknownModel for the base URL, with
// every matching Config.Models override applied in order. known reports
// whether the table or an override named the model.
func (g *Generator) ModelFor(name string) (m Model, known bool) {
	return resolveModel(name, g.cfg.BaseURL, g.cfg.Models)
}

// ResolveModel is Generator.ModelFor without a Generator: what the
// table, then the overrides, say of the model name at baseURL.
func ResolveModel(name, baseURL string, overrides []ModelOptions) (Model, bool) {
	return resolveModel(name, baseURL, overrides)
}

// resolveModel is ModelFor for a base URL and overrides.
func resolveModel(name, baseURL string, overrides []ModelOptions) (Model, bool) {
	m, known := lookupModel(Models, name)
	if !known {
		m = UnknownModel(name, baseURL)
	}
	for _, o := range overrides {
		if o.matches(name) {
			o.apply(&m)
			known = true
		}
	}
	m.Name = name
	return m, known
}

// ModelNames returns the names of the table's models (not its families),
// sorted.
func ModelNames() []string {
	var out []string
	for _, m := range Models {
		if !strings.HasSuffix(m.Name, "*") {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}
