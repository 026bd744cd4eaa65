package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/cassette"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
)

// modelFlags are the flags that say how a world reaches its model.
type modelFlags struct {
	llm, model, baseURL string
	options             []string // --model-option KEY=VALUE
}

// modelSetup is how a world reaches its model: the llm.generate adapter,
// the secrets its effects read, and what is known of the model.
type modelSetup struct {
	adapter         effects.Adapter // nil when built without one
	getSecret       func(string) (string, bool)
	provider, model string
	known           llm.Model
	// checkTemperature: known is the provider's knowledge of the model,
	// which says whether it takes a temperature.
	checkTemperature bool
}

// newModelSetup resolves the model of a world running cat. With
// withAdapter false it builds no adapter and needs no key: the model is
// called elsewhere (by the worker of a world in a PostgreSQL store). op
// names the command in errors.
func newModelSetup(cat *schema.Catalog, f modelFlags, getenv func(string) string, log *slog.Logger, op string, withAdapter bool) (*modelSetup, error) {
	model := f.model
	if model == "" {
		model = getenv("DEMIURGE_MODEL")
	}
	if model == "" {
		model = "gpt-5-mini"
	}
	overrides, err := modelOptions(cat, model, f.options)
	if err != nil {
		return nil, err
	}
	ms := &modelSetup{provider: f.llm, model: model}
	ms.known, _ = llm.ResolveModel(model, "", overrides)
	switch {
	case strings.HasPrefix(f.llm, "cassette:"):
		if withAdapter {
			c, err := cassette.Open(strings.TrimPrefix(f.llm, "cassette:"))
			if err != nil {
				return nil, err
			}
			ms.adapter = c
		}
		ms.provider = llm.ProviderResponses
		ms.getSecret = func(k string) (string, bool) { return "cassette", true } // no key needed
		if f.model == "" {
			ms.model = "cassette"
		}
	case f.llm == llm.ProviderResponses || f.llm == llm.ProviderChat:
		if !withAdapter {
			return ms, nil
		}
		base := f.baseURL
		if base == "" {
			base = getenv("OPENAI_BASE_URL")
		}
		azure := getenv("AZURE_OPENAI_ENDPOINT") != "" || isAzureURL(base)
		key := getenv("OPENAI_API_KEY")
		if key == "" && azure {
			key = getenv("AZURE_OPENAI_API_KEY")
		}
		if key == "" && base == "" && !azure {
			return nil, fmt.Errorf("%s: no API key: set OPENAI_API_KEY (or point --base-url at an OpenAI-compatible server, or use --llm cassette:DIR for the offline demo)", op)
		}
		cfg := llm.Config{Provider: f.llm, BaseURL: base, Logger: log, Models: overrides}
		if azure && base == "" {
			cfg.Azure = &llm.AzureConfig{Endpoint: getenv("AZURE_OPENAI_ENDPOINT"), APIVersion: getenv("AZURE_OPENAI_API_VERSION"), Deployment: getenv("AZURE_OPENAI_DEPLOYMENT")}
		}
		gen, err := llm.New(cfg)
		if err != nil {
			return nil, err
		}
		ms.known, _ = gen.ModelFor(model)
		ms.checkTemperature = true
		ms.adapter = &llm.Adapter{Generator: gen}
		// The world's llm/api secret is bound to OPENAI_API_KEY: without a
		// key, none is sent (a local server needs none; one that does
		// answers 401, which says so).
		ms.getSecret = func(k string) (string, bool) {
			if k == "OPENAI_API_KEY" {
				return key, true
			}
			v := getenv(k)
			return v, v != ""
		}
	default:
		return nil, usagef("--llm %q: want openai-responses, openai-chat or cassette:DIR", f.llm)
	}
	return ms, nil
}
