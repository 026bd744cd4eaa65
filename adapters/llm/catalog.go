package llm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"charm.land/catwalk/pkg/catwalk"
	"charm.land/catwalk/pkg/embedded"
)

// CatalogName names the model catalog demiurge takes its facts from:
// Charm's catwalk (the provider and model database Crush uses), whose
// data is embedded in the binary at the version go.mod pins. Its facts
// (prices, context windows, output limits, whether a model reasons) are
// kept by others; demiurge's rules (see rules) and the configuration's
// overrides are layered on top.
const CatalogName = "catwalk v0.52.1"

// catalogEntry is one model of one provider of the catalog.
type catalogEntry struct {
	provider string // the catalog's provider id ("openai", "openrouter")
	kind     string // the catalog's provider type ("openai", "openai-compat", "anthropic", "google", ...)
	id       string // the model's id at that provider
	name     string // its display name
	price    *Price // nil if the catalog gives none
	window   uint64
	maxOut   uint64
	reason   bool
	levels   []string // reasoning efforts it takes
}

// catalog indexes the catalog's models by provider and id.
type catalog struct {
	entries []*catalogEntry                     // in the catalog's order
	by      map[string]map[string]*catalogEntry // provider → id (and undated id) → entry
	order   []string                            // providers, the home providers first (see homeProviders)
}

// theCatalog is the catalog, read once from the embedded data.
var theCatalog = sync.OnceValue(func() *catalog { return newCatalog(embedded.GetAll()) })

// homeProviders are the providers of the model families demiurge knows,
// listed first by demiurge models.
var homeProviders = []string{"openai", "anthropic", "gemini", "xai", "deepseek", "moonshot", "zai", "openrouter", "vercel"}

func newCatalog(ps []catwalk.Provider) *catalog {
	c := &catalog{by: map[string]map[string]*catalogEntry{}}
	for _, p := range ps {
		id := string(p.ID)
		if id == "" || c.by[id] != nil {
			continue // a provider that did not load, or one listed twice
		}
		c.by[id] = map[string]*catalogEntry{}
		c.order = append(c.order, id)
		for _, m := range p.Models {
			e := &catalogEntry{provider: id, kind: string(p.Type), id: m.ID, name: m.Name,
				price: catalogPrice(m), window: nonNegative(m.ContextWindow), maxOut: nonNegative(m.DefaultMaxTokens),
				reason: m.CanReason, levels: slices.Clone(m.ReasoningLevels)}
			if m.ID == "" || c.by[id][m.ID] != nil {
				continue
			}
			c.entries = append(c.entries, e)
			c.by[id][m.ID] = e
			if undated := datedSnapshot().ReplaceAllString(m.ID, ""); undated != m.ID {
				if _, taken := c.by[id][undated]; !taken {
					c.by[id][undated] = e
				}
			}
		}
	}
	slices.SortStableFunc(c.order, func(a, b string) int {
		ia, ib := slices.Index(homeProviders, a), slices.Index(homeProviders, b)
		if ia < 0 {
			ia = len(homeProviders)
		}
		if ib < 0 {
			ib = len(homeProviders)
		}
		return cmp.Compare(ia, ib)
	})
	return c
}

func nonNegative(n int64) uint64 { return uint64(max(n, 0)) }

// catalogPrice reads a catalog model's price. The catalog has two cache
// prices, cost_per_1m_in_cached (a cache write, as Crush reads it) and
// cost_per_1m_out_cached (a cache read), but its provider files fill them
// unevenly: many put the cache-read price in the first and nothing in the
// second, a few put the output price in the second. They are read by what
// they can mean: a cache read is a discount on the input price, so the
// read price is the first of (out_cached, in_cached) that is above 0 and
// below the input price, and a write price is in_cached when it was not
// taken as the read price. A model with neither an input nor an output
// price has no price (free models are listed at 0, and so are models the
// catalog does not price).
func catalogPrice(m catwalk.Model) *Price {
	if m.CostPer1MIn <= 0 && m.CostPer1MOut <= 0 {
		return nil
	}
	p := &Price{Input: dollars(m.CostPer1MIn), Output: dollars(m.CostPer1MOut)}
	discount := func(v float64) bool { return v > 0 && v < m.CostPer1MIn }
	switch {
	case discount(m.CostPer1MOutCached):
		p.CachedInput = dollars(m.CostPer1MOutCached)
		if m.CostPer1MInCached > 0 {
			p.CacheWrite = dollars(m.CostPer1MInCached)
		}
	case discount(m.CostPer1MInCached):
		p.CachedInput = dollars(m.CostPer1MInCached)
	case m.CostPer1MInCached > 0:
		p.CacheWrite = dollars(m.CostPer1MInCached)
	}
	return p
}

// dollars converts a catalog price (dollars per million tokens) to
// micro-USD per million tokens; a negative, infinite or absurd one is 0.
func dollars(d float64) uint64 {
	if d <= 0 || math.IsNaN(d) || d > 1e6 {
		return 0
	}
	return usd(d)
}

// lookup finds the model name for a server whose catalog provider is
// server ("" if unknown): that provider's entry, else the entry of the
// model's own provider (by its name: gpt-* is OpenAI's). A model of no
// known family at a server demiurge does not know (a local server, a
// proxy) is not looked up: it may cost anything, nothing included. An id
// is matched whole, then without a dated snapshot suffix.
func (c *catalog) lookup(server, name string) (*catalogEntry, bool) {
	if e, ok := c.in(server, name); ok {
		return e, true
	}
	if home := homeProvider(name); home != "" {
		// A model of a known family is priced by its own provider only: a
		// reseller's price is not what the model's maker charges.
		return c.in(home, name)
	}
	return nil, false
}

// in finds name among provider's models.
func (c *catalog) in(provider, name string) (*catalogEntry, bool) {
	ms := c.by[provider]
	if ms == nil {
		return nil, false
	}
	if e, ok := ms[name]; ok {
		return e, true
	}
	e, ok := ms[datedSnapshot().ReplaceAllString(name, "")]
	return e, ok
}

// homeProvider names the provider whose models the name's family are:
// "openai" for gpt-* and o*, "anthropic" for claude-*, and so on; "" if
// none is known.
func homeProvider(name string) string {
	n := strings.ToLower(name)
	for _, f := range families {
		if strings.HasPrefix(n, f.prefix) {
			return f.provider
		}
	}
	return ""
}

// ModelProvider names the provider whose model family name belongs to,
// in the catalog's words ("openai" for gpt-*, "deepseek" for
// deepseek-*), "" if none is known. It names the model's maker, which is
// who serves it unless a router or a proxy stands between.
func ModelProvider(name string) string { return homeProvider(name) }

// families map model-name prefixes to the provider whose models they are.
var families = []struct{ prefix, provider string }{
	{"gpt-", "openai"}, {"o1", "openai"}, {"o3", "openai"}, {"o4", "openai"}, {"chatgpt-", "openai"},
	{"claude-", "anthropic"},
	{"gemini-", "gemini"}, {"gemma-", "gemini"},
	{"grok-", "xai"},
	{"deepseek-", "deepseek"},
	{"kimi-", "moonshot"}, {"moonshot-", "moonshot"},
	{"glm-", "zai"},
}

// serverProvider names the catalog provider of the server at baseURL, ""
// if it is not one demiurge knows.
func serverProvider(baseURL string) string {
	s, ok := serverFor(baseURL)
	if !ok {
		return ""
	}
	return s.provider
}

// apiOf names the wire API of a catalog provider type.
func apiOf(kind string) string {
	switch kind {
	case string(catwalk.TypeOpenAI), string(catwalk.TypeAzure):
		return ProviderResponses
	case string(catwalk.TypeOpenAICompat), string(catwalk.TypeOpenRouter), string(catwalk.TypeVercel):
		return ProviderChat
	case string(catwalk.TypeGoogle):
		return "gemini"
	}
	return kind
}

// CatalogProviders returns the catalog's providers, the providers of the
// model families demiurge knows first.
func CatalogProviders() []string { return slices.Clone(theCatalog().order) }

// DefaultListed are the providers whose models demiurge models lists when
// asked for none: the makers of the model families demiurge knows.
var DefaultListed = []string{"openai", "anthropic", "gemini", "xai", "deepseek", "moonshot", "zai"}

// KnownModels returns what is known of every model the catalog lists for
// the providers (nil: DefaultListed), each resolved as ResolveModel would
// at that provider's server with the overrides applied, followed, when
// providers is nil, by the models demiurge's rules name that the catalog
// does not. A provider the catalog does not have is an error.
func KnownModels(providers []string, overrides []ModelOptions) ([]Model, error) {
	c := theCatalog()
	rulesToo := providers == nil
	if providers == nil {
		providers = DefaultListed
	}
	var out []Model
	seen := map[string]bool{}
	for _, p := range providers {
		if c.by[p] == nil {
			return nil, fmt.Errorf("the catalog (%s) has no provider %q (it has %s)", CatalogName, p, strings.Join(c.order, ", "))
		}
		for _, e := range c.entries {
			if e.provider != p {
				continue
			}
			m, _ := resolveModelAt(p, e.id, "", overrides)
			out = append(out, m)
			seen[e.id] = true
		}
	}
	if rulesToo {
		for _, name := range ModelNames() {
			if !seen[name] {
				m, _ := resolveModelAt("", name, "", overrides)
				if home := homeProvider(name); m.Provider == "" && home != "" {
					m.Provider = home
					for _, e := range c.entries {
						if e.provider == home {
							m.API = apiOf(e.kind)
							break
						}
					}
				}
				out = append(out, m)
			}
		}
	}
	return out, nil
}
