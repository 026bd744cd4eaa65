package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/internal/levenshtein"
)

func newModelsCommand(a *app) *cobra.Command {
	var (
		providers []string
		all       bool
		asJSON    bool
		options   []string
		defaults  bool
	)
	cmd := &cobra.Command{
		Use:   "models [PATTERN]",
		Short: "List the models demiurge knows: provider, API, context, prices, reasoning, and where each fact comes from",
		Long: `List what demiurge knows of models. Facts come in layers:

  1. the model catalog, ` + llm.CatalogName + ` (Charm's provider and model
     database, embedded in the binary): prices, context windows, output
     limits, whether a model reasons, for each provider that serves it;
  2. demiurge's rules of each model family: the request shape it takes
     (token-limit field, temperature, reasoning effort, how reasoning goes
     back), and the facts of the models the catalog lacks;
  3. the configuration: the manifest's "models" and --model-option (here,
     --model-option applies to the models PATTERN matches).

PATTERN selects models by name: a name, or a pattern where * stands for any
text (gpt-5*); without *, any model whose name contains it. Without
--provider, the models of OpenAI, Anthropic, Google Gemini, xAI, DeepSeek,
Moonshot and Z.ai are listed, with those the rules add; --provider lists
another provider's (openrouter, vercel, groq…: prices there are that
provider's), --all every provider's.

Prices are US dollars per million tokens: input, cache read, cache write,
output. "-" is unknown: a call of a model without a price has an unknown
cost, never a refused request. An unknown model gets its family's rules (or
a conservative default) and an unknown cost: models NAME says that it knows
no model NAME (exit 1, with the names it knows that are close), unless
--defaults or --model-option asks what a call of it would get.

With --json, one JSON document: an array with an object per model, with
the source of each fact (docs/cli.md).`,
		Example: `  demiurge models gpt-5
  demiurge models --provider openrouter 'anthropic/*'
  demiurge models --json claude-sonnet-4-5
  demiurge models --model-option price_input=2 --model-option price_output=8 my-model`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pattern := ""
			if len(args) == 1 {
				pattern = args[0]
			}
			var overrides []llm.ModelOptions
			if len(options) > 0 {
				o := llm.ModelOptions{Match: "*"}
				if pattern != "" {
					o.Match = pattern
					if !strings.Contains(pattern, "*") {
						o.Match = "*" + pattern + "*"
					}
				}
				for _, kv := range options {
					if err := o.ParseModelOption(kv); err != nil {
						return &usageError{err}
					}
				}
				overrides = append(overrides, o)
			}
			if all {
				providers = llm.CatalogProviders()
			}
			ms, err := llm.KnownModels(providers, overrides)
			if err != nil {
				return &usageError{err}
			}
			var shown []llm.Model
			for _, m := range ms {
				if matchModel(pattern, m.Name) {
					shown = append(shown, m)
				}
			}
			if len(shown) == 0 && pattern != "" && !strings.Contains(pattern, "*") {
				// A model nothing lists: what a call of it would get, if
				// demiurge's rules know its family or the user asks;
				// else a name mistyped, most likely: said so.
				m, known := llm.ResolveModel(pattern, "", overrides)
				if !known && !defaults && len(options) == 0 {
					return unknownModel(pattern, ms)
				}
				shown = append(shown, m)
			}
			if asJSON { // one document, as every report (docs/cli.md)
				list := make([]any, 0, len(shown))
				for _, m := range shown {
					list = append(list, modelJSON(m))
				}
				enc := json.NewEncoder(a.out)
				enc.SetEscapeHTML(false)
				return enc.Encode(list)
			}
			return writeModels(a, shown)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&providers, "provider", nil, "list the models of the catalog's `PROVIDER` (repeatable; openrouter, vercel, groq, …)")
	f.BoolVar(&all, "all", false, "list the models of every provider of the catalog")
	f.BoolVar(&asJSON, "json", false, "print one JSON document, an array of models, with the source of each fact")
	f.BoolVar(&defaults, "defaults", false, "for a model NAME nothing knows, show the conservative default a call of it would get (without it: an error naming close names)")
	f.StringArrayVar(&options, "model-option", nil, "override what demiurge knows of the listed models, as `KEY=VALUE` (repeatable): "+strings.Join(llm.ModelOptionKeys, ", "))
	return cmd
}

// unknownModel is the error of models NAME for a NAME that no model
// listed contains and no rule knows: with the names of ms closest to it.
func unknownModel(name string, ms []llm.Model) error {
	type near struct {
		name string
		d    int
	}
	var close []near
	seen := map[string]bool{}
	limit := max(2, len(name)/3)
	for _, m := range ms {
		if seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		if d := levenshtein.Distance(strings.ToLower(name), strings.ToLower(m.Name)); d <= limit {
			close = append(close, near{m.Name, d})
		}
	}
	slices.SortStableFunc(close, func(a, b near) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	msg := fmt.Sprintf("models %s: demiurge knows no model %s (no listed model's name contains it, and no rule knows its family)", name, name)
	if len(close) > 0 {
		names := make([]string, 0, 5)
		for _, c := range close[:min(5, len(close))] {
			names = append(names, c.name)
		}
		msg += "; did you mean " + strings.Join(names, ", ") + "?"
	} else {
		msg += "."
	}
	msg += fmt.Sprintf(" A call of it gets a conservative default and an unknown cost: demiurge models --defaults %s shows it; --provider or --all lists other providers' models", name)
	return errors.New(msg)
}

// matchModel reports whether a model name is selected by pattern: "" all,
// a pattern with * as a glob, else a part of the name.
func matchModel(pattern, name string) bool {
	if !strings.Contains(pattern, "*") {
		return strings.Contains(name, pattern)
	}
	return llm.MatchName(pattern, name)
}

// dollars writes a price in micro-USD per million tokens as dollars.
func dollars(microUSD uint64) string {
	s := fmt.Sprintf("%.4f", float64(microUSD)/1e6)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// writeModels writes the models as a table.
func writeModels(a *app, ms []llm.Model) error {
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tMODEL\tAPI\tCONTEXT\tOUTPUT\tINPUT\tCACHE READ\tCACHE WRITE\tOUTPUT $\tREASONING\tFACTS FROM")
	for _, m := range ms {
		in, read, write, out := "-", "-", "-", "-"
		if p := m.Price; p != nil {
			in, out = dollars(p.Input), dollars(p.Output)
			read, write = dollars(p.Input), dollars(p.Input)
			if p.CachedInput > 0 {
				read = dollars(p.CachedInput)
			}
			if p.CacheWrite > 0 {
				write = dollars(p.CacheWrite)
			}
		}
		reasoning := "no"
		if m.Reasoning {
			reasoning = "yes"
			if len(m.ReasoningLevels) > 0 {
				reasoning = strings.Join(m.ReasoningLevels, ",")
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(m.Provider), m.Name, dash(m.API),
			tokens(m.ContextWindow), tokens(m.MaxOutputTokens), in, read, write, out, reasoning, factsFrom(m))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tokens writes a token count shortly: 400k, 1.05M; "-" for 0.
func tokens(n uint64) string {
	switch {
	case n == 0:
		return "-"
	case n >= 1_000_000:
		return strings.TrimSuffix(fmt.Sprintf("%.2f", float64(n)/1e6), ".00") + "M"
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// factsFrom sums up where a model's facts came from: the catalog, the
// rules, the configuration, in that order, each once.
func factsFrom(m llm.Model) string {
	var out []string
	for _, s := range []string{m.Facts.Price, m.Facts.ContextWindow, m.Facts.MaxOutputTokens, m.Facts.Reasoning} {
		short := "default"
		switch {
		case strings.HasPrefix(s, llm.CatalogName):
			short = "catalog"
		case strings.HasPrefix(s, "demiurge's rules"):
			short = "rules"
		case strings.HasPrefix(s, "the configuration"):
			short = "configuration"
		case s == "":
			continue
		}
		if !slices.Contains(out, short) {
			out = append(out, short)
		}
	}
	if len(out) == 0 {
		return "default (unknown model)"
	}
	return strings.Join(out, "+")
}

// modelInfo is a model as demiurge models --json prints it.
type modelInfo struct {
	Provider        string     `json:"provider"`
	Model           string     `json:"model"`
	API             string     `json:"api"`
	ContextWindow   uint64     `json:"context_window"`
	MaxOutputTokens uint64     `json:"max_output_tokens"`
	Price           *priceInfo `json:"price"`
	Reasoning       bool       `json:"reasoning"`
	ReasoningLevels []string   `json:"reasoning_levels,omitempty"`
	Request         struct {
		TokenLimit         string `json:"token_limit_field"`
		Temperature        bool   `json:"temperature"`
		ReasoningEffort    bool   `json:"reasoning_effort"`
		EncryptedReasoning bool   `json:"encrypted_reasoning"`
		ReasoningEcho      string `json:"reasoning_echo,omitempty"`
	} `json:"request"`
	Sources struct {
		Price           string `json:"price,omitempty"`
		ContextWindow   string `json:"context_window,omitempty"`
		MaxOutputTokens string `json:"max_output_tokens,omitempty"`
		Reasoning       string `json:"reasoning,omitempty"`
		Request         string `json:"request,omitempty"`
		AsOf            string `json:"as_of,omitempty"`
	} `json:"sources"`
}

// priceInfo is a price in US dollars per million tokens.
type priceInfo struct {
	Input      float64 `json:"input"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
	Output     float64 `json:"output"`
}

func modelJSON(m llm.Model) modelInfo {
	v := modelInfo{Provider: m.Provider, Model: m.Name, API: m.API, ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens,
		Reasoning: m.Reasoning, ReasoningLevels: m.ReasoningLevels}
	if p := m.Price; p != nil {
		read, write := p.CachedInput, p.CacheWrite
		if read == 0 {
			read = p.Input
		}
		if write == 0 {
			write = p.Input
		}
		v.Price = &priceInfo{Input: float64(p.Input) / 1e6, CacheRead: float64(read) / 1e6, CacheWrite: float64(write) / 1e6, Output: float64(p.Output) / 1e6}
	}
	v.Request.TokenLimit, v.Request.Temperature, v.Request.ReasoningEffort = string(m.ChatTokenLimit), m.Temperature, m.ReasoningEffort
	v.Request.EncryptedReasoning, v.Request.ReasoningEcho = m.EncryptedReasoning, m.ReasoningEcho
	v.Sources.Price, v.Sources.ContextWindow, v.Sources.MaxOutputTokens = m.Facts.Price, m.Facts.ContextWindow, m.Facts.MaxOutputTokens
	v.Sources.Reasoning, v.Sources.Request, v.Sources.AsOf = m.Facts.Reasoning, m.Source, m.AsOf
	return v
}
