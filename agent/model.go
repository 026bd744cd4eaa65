package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/cassette"
	"github.com/demiurge-dev/demiurge/effects"
)

// DefaultModel is the model a world talks to when none is named.
const DefaultModel = "gpt-5-mini"

// Model says which model answers the agent and how to reach it. The zero
// Model is DefaultModel through the OpenAI Responses API, with the key
// and base URL of the environment (WithEnv).
type Model struct {
	// Name is the model, e.g. "gpt-5-mini", "claude-sonnet-5" or
	// "gemini-3.5-flash" (default DefaultModel).
	Name string
	// Provider is the API that reaches the model: llm.ProviderResponses
	// (OpenAI's Responses API), llm.ProviderChat (Chat Completions, for
	// servers without the Responses API), llm.ProviderAnthropic
	// (Anthropic's Messages API) or llm.ProviderGemini (the Gemini API).
	// Default: by the model's name (llm.ProviderFor): claude-* Anthropic,
	// gemini-* Gemini, else the Responses API.
	Provider string
	// BaseURL is the API's root (default the provider's variable:
	// $OPENAI_BASE_URL, $ANTHROPIC_BASE_URL or $GOOGLE_GEMINI_BASE_URL, else
	// the provider's public API). An Azure OpenAI resource's URL is
	// recognized as such.
	BaseURL string
	// APIKey is the provider's key (default $OPENAI_API_KEY, or
	// $AZURE_OPENAI_API_KEY for Azure; $ANTHROPIC_API_KEY; $GOOGLE_API_KEY,
	// else $GEMINI_API_KEY). Without one none is sent: a local server needs
	// none.
	APIKey string
	// Options override what demiurge knows of models (the token-limit
	// field, temperature, reasoning, prices, the context window), after
	// the manifest's "models"; later entries win. See llm.ModelOptions.
	Options []llm.ModelOptions
	// Temperature is the sampling temperature, e.g. "0.2" (default: the
	// provider's). A model that reasons takes none: Open refuses it.
	Temperature string
	// NoStream asks for one whole answer per call instead of a stream
	// (for servers that cannot stream); no TextDelta events are sent.
	NoStream bool
	// CassetteLooseHint is, for a Cassette, how the program's user makes
	// it loose, which the error of a model call the cassette refuses
	// names ("demiurge eval --cassette-loose"); default
	// cassette.DefaultLooseHint (demiurge run's flag, CassetteLoose).
	CassetteLooseHint string
	// CassetteAdvice, if set, is what the error of a model call the
	// cassette refuses ends with instead of its default advice: what the
	// program's user does about it (cassette.Options.Advice).
	CassetteAdvice string
	// KeyLater opens a world whose model has no key (see APIKey) all the
	// same, for a program that only reads it (demiurge run -m /show N):
	// each model call then fails, its error saying that no key is set.
	// Without it, Open refuses such a model.
	KeyLater bool

	cassette      string
	cassetteLoose bool
}

// Cassette is the model that answers from a recorded session bundle
// (World.Export, demiurge export) instead of a provider: the answers of its model calls,
// in order, with no network and no key. The tools still run for real. It
// is how recorded sessions are replayed against new code and how the
// offline demo runs. The calls are made under the name of the model the
// recording asked for (its first call's), unless the Model's Name gives
// another: the chat records that name, and trace and worlds show it.
//
// The cassette is strict: a model call whose request is not the recorded
// call's (another user message, other tools or system prompt; see
// cassette.Mismatch for what may differ) fails, and the turn ends with an
// error that shows what differs. CassetteLoose answers it all the same.
func Cassette(dir string) Model { return Model{cassette: dir} }

// CassetteLoose is Cassette, except that a model call whose request is
// not the recorded one gets the recorded answer all the same: the turn
// streams a one-line Notice naming what differs (not journaled: its Seq
// is the journal's head when the call ran), and the log gets a warning
// with the diff.
func CassetteLoose(dir string) Model { return Model{cassette: dir, cassetteLoose: true} }

// logMismatch logs a model call that a loose cassette answers though its
// request is not the recorded one, with the diff.
func logMismatch(log *slog.Logger, m *cassette.Mismatch) {
	log.Warn("cassette: a model call is not the recorded one; answered all the same (loose)", "cassette", m.Dir, "call", m.Call, "differs", m.Summary(), "diff", m.Diff())
}

// Loose returns m, loose if it is a cassette (see CassetteLoose).
func (m Model) Loose() Model {
	m.cassetteLoose = m.cassette != ""
	return m
}

// CheckCassette reports what makes a Cassette's bundle unusable (not
// there, no model answers), as the world that opens it would, so that a
// program can say so before it does anything else; nil for a model that
// is not a cassette.
func (m Model) CheckCassette() error {
	if m.cassette == "" {
		return nil
	}
	_, err := cassette.Open(m.cassette, nil)
	return err
}

// IsCassette reports whether m answers from a recorded session.
func (m Model) IsCassette() bool { return m.cassette != "" }

// model is a Model made ready to run: the adapter of llm.generate and
// what a chat's settings say of it.
type model struct {
	provider string // the settings' provider
	name     string
	known    llm.Model
	adapter  effects.Adapter
	// secret resolves the world's secrets: OPENAI_API_KEY is the model's
	// key, the rest come from the environment.
	secret  func(string) (string, bool)
	stream  bool
	temp    string
	baseURL string
	// warn is where a loose cassette's warnings go, once the world is
	// open.
	warn atomic.Pointer[func(*effects.Intent, *cassette.Mismatch)]
}

// resolve readies m for a world whose manifest's model overrides are
// manifest.
// Without local, the model is not called from here (a worker calls it):
// only what the settings say of it is resolved, and no key is needed.
func (m Model) resolve(manifest []llm.ModelOptions, c *config, local bool) (*model, error) {
	getenv := c.getenv
	env := func(k string) string { v, _ := getenv(k); return v }
	overrides := append(append([]llm.ModelOptions(nil), manifest...), m.Options...)
	out := &model{name: m.Name, stream: !m.NoStream, temp: m.Temperature}
	if m.cassette != "" {
		log := c.log
		cs, err := cassette.Open(m.cassette, &cassette.Options{Loose: m.cassetteLoose, World: c.name, LooseHint: m.CassetteLooseHint, Advice: m.CassetteAdvice, Warn: func(call *effects.Call, mm *cassette.Mismatch) {
			if f := out.warn.Load(); f != nil {
				(*f)(call.Intent, mm)
				return
			}
			logMismatch(log, mm)
		}})
		if err != nil {
			return nil, err
		}
		if out.name == "" {
			// The calls are made as the recording's were: under its model's
			// name, which the chat records (trace, worlds).
			out.name = cmp.Or(cs.Model(), "cassette")
		}
		out.known, _ = llm.ResolveModel(out.name, "", overrides)
		// The calls are made as the recording's were, through its API.
		out.provider, out.adapter = cmp.Or(cs.Provider(), llm.ProviderResponses), cs
		out.secret = func(string) (string, bool) { return "cassette", true } // no key needed
		return out, nil
	}
	if out.name == "" {
		out.name = DefaultModel
	}
	out.provider = m.Provider
	if out.provider == "" {
		out.provider = llm.ProviderFor(out.name)
	}
	if !llm.IsProvider(out.provider) {
		return nil, fmt.Errorf("model provider %q: want one of %s (or agent.Cassette)", out.provider, strings.Join(llm.Providers(), ", "))
	}
	native := out.provider == llm.ProviderAnthropic || out.provider == llm.ProviderGemini
	base := m.BaseURL
	if base == "" {
		base = env(llm.BaseURLEnv(out.provider))
	}
	azure := !native && (env("AZURE_OPENAI_ENDPOINT") != "" || isAzureURL(base))
	key := m.APIKey
	for _, k := range llm.KeyEnv(out.provider) {
		if key == "" {
			key = env(k)
		}
	}
	if key == "" && azure {
		key = env("AZURE_OPENAI_API_KEY")
	}
	if !local {
		out.baseURL = base
		out.known, _ = llm.ResolveModel(out.name, base, overrides)
		return out, nil
	}
	var noKey error
	if key == "" && base == "" && !azure {
		if native {
			noKey = fmt.Errorf("no API key: set %s for model %s (or point the base URL at a server that speaks its API, or answer from a recorded session with agent.Cassette)", strings.Join(llm.KeyEnv(out.provider), " or "), out.name)
		} else {
			noKey = errors.New("no API key: set OPENAI_API_KEY (or point the base URL at an OpenAI-compatible server, or answer from a recorded session with agent.Cassette)")
		}
		if !m.KeyLater {
			return nil, noKey
		}
	}
	out.baseURL = base
	cfg := llm.Config{Provider: out.provider, BaseURL: base, Logger: c.log, Models: overrides}
	if azure && base == "" {
		cfg.Azure = &llm.AzureConfig{Endpoint: env("AZURE_OPENAI_ENDPOINT"), APIVersion: env("AZURE_OPENAI_API_VERSION"), Deployment: env("AZURE_OPENAI_DEPLOYMENT")}
	}
	gen, err := llm.New(cfg)
	if err != nil {
		return nil, err
	}
	out.known, _ = gen.ModelFor(out.name)
	if m.Temperature != "" && !out.known.Temperature {
		return nil, fmt.Errorf("%w: model %s does not take a temperature (it reasons); drop it, or say that it does with the model option temperature=true", ErrTemperature, out.name)
	}
	out.adapter = &llm.Adapter{Generator: gen}
	if noKey != nil { // KeyLater: the world opens, its model calls fail
		out.adapter = effects.AdapterFunc(func(context.Context, *effects.Call) effects.Receipt {
			return effects.Errorf("llm", "%v", noKey)
		})
	}
	// The world's llm/api secret is bound to OPENAI_API_KEY, whatever the
	// provider: it names the model's key. Without a key none is sent (a
	// local server needs none; one that does answers 401, which says so).
	out.secret = func(k string) (string, bool) {
		if k == "OPENAI_API_KEY" {
			return key, true
		}
		return getenv(k)
	}
	return out, nil
}

// ErrTemperature is returned (wrapped) by Open for a temperature given to
// a model that takes none.
var ErrTemperature = errors.New("temperature not taken")

// isAzureURL reports whether a base URL names an Azure OpenAI resource.
func isAzureURL(base string) bool {
	for _, s := range []string{".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"} {
		if strings.Contains(base, s) {
			return true
		}
	}
	return false
}
