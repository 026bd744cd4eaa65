package llm

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/demiurge-dev/demiurge/cas/chunked"
	"github.com/demiurge-dev/demiurge/cas/reflist"
)

// DefaultBaseURL is the API root used when neither Config.BaseURL nor
// $OPENAI_BASE_URL is set.
const DefaultBaseURL = "https://api.openai.com/v1"

// The API roots of the native providers, used when neither Config.BaseURL
// (for Config.Provider) nor the provider's environment variable
// ($ANTHROPIC_BASE_URL, $GOOGLE_GEMINI_BASE_URL) is set.
const (
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultGeminiBaseURL    = "https://generativelanguage.googleapis.com"
)

// Defaults of Config's zero fields.
const (
	DefaultMaxAttempts  = 3
	DefaultTimeout      = 5 * time.Minute
	DefaultMaxItemBytes = 64 << 10
)

// maxRetryAfter is the longest server-requested wait (Retry-After) that is
// honoured; a longer one ends the retries at once.
const maxRetryAfter = time.Minute

// maxBody is the largest response body read; a larger one is an error.
const maxBody = 64 << 20

// Config configures a Generator. The zero Config is usable: every zero field
// falls back to its documented default.
type Config struct {
	// Provider is used when Params.Provider is "": one of Providers
	// (default ProviderResponses).
	Provider string
	// BaseURL is the API root of Provider, such as
	// "https://api.openai.com/v1" or "http://127.0.0.1:11434/v1"; OpenAI's
	// requests go to BaseURL+"/responses" and BaseURL+"/chat/completions",
	// Anthropic's to BaseURL+"/v1/messages", Gemini's to
	// BaseURL+"/v1beta/models/…". Default: the provider's environment
	// variable (BaseURLEnv), else its public API (DefaultBaseURL,
	// DefaultAnthropicBaseURL, DefaultGeminiBaseURL). The other providers
	// a call may name get theirs the same way. New reads the environment;
	// Generate never does.
	BaseURL string
	// Server names who serves BaseURL, in the catalog's words
	// ("openrouter", "deepseek"; see CatalogName), when its host does not
	// say (a proxy, a tunnel, a test's loopback server); "" lets the host
	// say. It decides whose prices apply, how reasoning goes back, and the
	// receipt's provider name.
	Server string
	// HTTPClient sends the requests; nil means a client on
	// http.DefaultTransport. Its own Timeout, if any, also applies.
	HTTPClient *http.Client
	// Models override what the built-in table (Models) says of a model,
	// or describe models it does not know; later entries win. See
	// ModelOptions and ModelFor.
	Models []ModelOptions
	// Azure, if set, sends the requests to an Azure OpenAI resource:
	// see AzureConfig. New sets it from BaseURL when that names an Azure
	// resource, and from $AZURE_OPENAI_ENDPOINT when BaseURL is "".
	Azure *AzureConfig
	// MaxAttempts is how many times one call is tried in all (1 = never
	// retried); 0 means DefaultMaxAttempts.
	MaxAttempts int
	// Backoff returns how long to wait after failed attempt n (1-based)
	// before the next; nil means DefaultBackoff. A server's Retry-After of
	// up to a minute is honoured when it asks for longer.
	Backoff func(attempt int) time.Duration
	// Timeout bounds each attempt, a whole stream included; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Store sends store:true, so that the provider keeps responses and a
	// later call can chain to one with previous_response_id. By default
	// (false) calls are stateless: store:false and reasoning is replayed
	// from include:["reasoning.encrypted_content"].
	Store bool
	// MaxItemBytes bounds what is sent of one transcript item: a longer
	// message text, function call's arguments or tool output is sent cut,
	// with a note of its size (the store keeps it whole), so that one
	// oversized item does not weigh on every later request. 0 means
	// DefaultMaxItemBytes.
	MaxItemBytes int
	// Logger receives a line per retried attempt; nil means slog.Default().
	// The API key is never logged.
	Logger *slog.Logger
}

// DefaultBackoff waits 500ms after the first failed attempt and doubles
// the wait each time up to 30s, with jitter: a random wait between half
// the step and the full step.
func DefaultBackoff(attempt int) time.Duration {
	const base, ceiling = 500 * time.Millisecond, 30 * time.Second
	d := base
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	return d/2 + rand.N(d/2+1)
}

// Generator calls the model APIs. It is safe for concurrent use.
type Generator struct {
	tools     toolsCache
	messages  messagesCache
	chunks    reflist.Cache
	evidence  chunked.Writer // the requests, kept as chunks
	segs      segCache       // transcript items, encoded for a dialect
	chains    chains         // the last request of recent transcripts
	cfg       Config
	responses responses.ResponseService
	chat      openai.ChatCompletionService
	logger    *slog.Logger

	sessions  sessions          // the native providers' chats
	bases     map[string]string // the native providers' API roots
	anthropic anthropic.Client
}

// New returns a Generator for cfg, after filling its defaults and checking
// it.
func New(cfg Config) (*Generator, error) {
	if cfg.Provider == "" {
		cfg.Provider = ProviderResponses
	}
	if !IsProvider(cfg.Provider) {
		return nil, fmt.Errorf("llm: config: provider %q is not one of %s", cfg.Provider, strings.Join(Providers(), ", "))
	}
	// The native providers' roots: the configured one's, else each from
	// its environment variable, else its public API.
	bases := map[string]string{}
	for p, def := range map[string]string{ProviderAnthropic: DefaultAnthropicBaseURL, ProviderGemini: DefaultGeminiBaseURL} {
		b := os.Getenv(BaseURLEnv(p))
		if p == cfg.Provider && cfg.BaseURL != "" {
			b = cfg.BaseURL
		}
		if b == "" {
			b = def
		}
		if u, err := url.Parse(b); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("llm: config: %s base URL %q is not an http(s) URL such as %s", p, b, def)
		}
		bases[p] = strings.TrimRight(b, "/")
	}
	if isNative(cfg.Provider) {
		cfg.BaseURL = "" // the OpenAI services' root comes from the environment
	}
	if cfg.BaseURL == "" && cfg.Azure == nil {
		cfg.BaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if cfg.BaseURL == "" && cfg.Azure == nil && os.Getenv("AZURE_OPENAI_ENDPOINT") != "" {
		cfg.Azure = &AzureConfig{}
	}
	if cfg.Azure != nil || isAzureBase(cfg.BaseURL) {
		az, err := resolveAzure(cfg.Azure, cfg.BaseURL, os.Getenv)
		if err != nil {
			return nil, err
		}
		cfg.Azure = az
		cfg.BaseURL = az.Endpoint
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: config: base URL %q is not an http(s) URL such as %s", cfg.BaseURL, DefaultBaseURL)
	}
	for i, o := range cfg.Models {
		if o.Match == "" {
			return nil, fmt.Errorf("llm: config: Models[%d] has no Match: name the model (or family, ending in *) it applies to", i)
		}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: http.DefaultTransport}
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MaxAttempts < 0 {
		return nil, fmt.Errorf("llm: config: MaxAttempts %d is negative", cfg.MaxAttempts)
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxItemBytes <= 0 {
		cfg.MaxItemBytes = DefaultMaxItemBytes
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("llm: config: Timeout %s is negative", cfg.Timeout)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// The services are built directly, not through openai.NewClient, so
	// the SDK reads no environment variable: the key comes per call.
	common := []option.RequestOption{
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0), // retries are ours, each one counted
	}
	respBase, chatBase := cfg.BaseURL, cfg.BaseURL
	if az := cfg.Azure; az != nil {
		respBase, chatBase = az.base(), az.base()
		if q := az.query(); q != "" {
			common = append(common, option.WithQueryAdd("api-version", q))
		}
	}
	return &Generator{
		cfg:       cfg,
		responses: responses.NewResponseService(append(common, option.WithBaseURL(respBase))...),
		chat:      openai.NewChatCompletionService(append(slices.Clip(common), option.WithBaseURL(chatBase))...),
		logger:    logger,
		bases:     bases,
		// A client made without anthropic.NewClient reads no environment
		// variable: the key comes per call.
		anthropic: anthropic.Client{Options: []aoption.RequestOption{
			aoption.WithBaseURL(bases[ProviderAnthropic] + "/"),
			aoption.WithHTTPClient(cfg.HTTPClient),
			aoption.WithMaxRetries(0), // retries are ours, each one counted
		}},
	}, nil
}

// baseOf returns the API root the generator sends provider's calls to.
func (g *Generator) baseOf(provider string) string {
	if b, ok := g.bases[provider]; ok {
		return b
	}
	return g.cfg.BaseURL
}
