package llm

import (
	"net"
	"net/url"
	"strings"
)

// server is what is known of an OpenAI-compatible server by its host:
// who runs it, in the catalog's words.
type server struct {
	// host is the host name, or a suffix of it starting with ".".
	host string
	// provider names who serves the calls ("openrouter"), as receipts
	// and traces name it.
	provider string
	// echo, if set, is the Model.ReasoningEcho the server's models get
	// whatever their family's rule: EchoNone for a server known to refuse
	// reasoning fields in its messages.
	echo string
	// refuses are the reasoning fields the server is known to refuse in
	// an assistant message (Model.ReasoningRefused).
	refuses []string
}

// servers are the hosts of the OpenAI-compatible servers demiurge knows.
// A server not listed here is named by the model's provider, if the
// catalog knows the model, else not at all.
var servers = []server{
	// OpenAI's and Azure's Chat Completions take no field a message
	// does not define; their models send no reasoning text.
	{host: "api.openai.com", provider: "openai", echo: EchoNone},
	{host: ".openai.azure.com", provider: "azure", echo: EchoNone},
	{host: ".cognitiveservices.azure.com", provider: "azure", echo: EchoNone},
	{host: ".services.ai.azure.com", provider: "azure", echo: EchoNone},
	{host: "api.anthropic.com", provider: "anthropic"},
	{host: "generativelanguage.googleapis.com", provider: "gemini"},
	{host: "aiplatform.googleapis.com", provider: "vertexai"},
	{host: ".aiplatform.googleapis.com", provider: "vertexai"},
	{host: "api.deepseek.com", provider: "deepseek"},
	{host: "openrouter.ai", provider: "openrouter"},
	{host: "ai-gateway.vercel.sh", provider: "vercel"},
	{host: "api.x.ai", provider: "xai"},
	{host: "api.moonshot.ai", provider: "moonshot"},
	{host: "api.moonshot.cn", provider: "moonshot"},
	{host: "api.z.ai", provider: "zai"},
	{host: "open.bigmodel.cn", provider: "zhipu"},
	{host: "dashscope.aliyuncs.com", provider: "alibaba"},
	{host: "dashscope-intl.aliyuncs.com", provider: "alibaba-singapore"},
	{host: "dashscope-us.aliyuncs.com", provider: "alibaba-us"},
	// Groq refuses reasoning_content in an assistant message ("property
	// 'reasoning_content' is unsupported"); it takes back the reasoning
	// its reasoning models answer with. Cerebras refuses reasoning
	// fields.
	{host: "api.groq.com", provider: "groq", refuses: []string{"reasoning_content"}},
	{host: "api.cerebras.ai", provider: "cerebras", echo: EchoNone},
	// Mistral refuses fields its messages do not define (422 "Extra
	// inputs are not permitted").
	{host: "api.mistral.ai", provider: "mistral", echo: EchoNone},
	{host: "api.together.xyz", provider: "together"},
	{host: "router.huggingface.co", provider: "huggingface"},
	{host: "api.fireworks.ai", provider: "fireworks"},
	{host: "ollama.com", provider: "ollama"},
}

// serverFor returns what is known of the server at baseURL.
func serverFor(baseURL string) (server, bool) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return server{}, false
	}
	h := strings.ToLower(u.Hostname())
	for _, s := range servers {
		if h == s.host || (strings.HasPrefix(s.host, ".") && strings.HasSuffix(h, s.host)) {
			return s, true
		}
	}
	if u.Port() == "11434" && isLocal(h) {
		return server{host: h, provider: "ollama"}, true
	}
	return server{}, false
}

// serverByProvider returns the first server of a catalog provider.
func serverByProvider(provider string) (server, bool) {
	if provider == "" {
		return server{}, false
	}
	for _, s := range servers {
		if s.provider == provider {
			return s, true
		}
	}
	return server{}, false
}

// isLocal reports whether h is this machine.
func isLocal(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// providerName names who serves the generator's calls: the server's
// provider if its host is known, else "" (a local server or a proxy
// demiurge does not know: the model's own provider is not who served it).
func (g *Generator) providerName() string { return g.server() }

// server names the catalog provider of the generator's server:
// Config.Server, else the base URL's host's (see servers), else "".
func (g *Generator) server() string {
	switch {
	case g.cfg.Server != "":
		return g.cfg.Server
	case g.cfg.Azure != nil:
		return "azure"
	}
	return serverProvider(g.cfg.BaseURL)
}

// providerNameOf names who serves the generator's calls of provider: for
// the OpenAI protocols, as providerName says; for a native provider, the
// server's provider if its host is known, else the provider whose wire
// format it speaks ("anthropic", "gemini").
func (g *Generator) providerNameOf(provider string) string {
	if !isNative(provider) {
		return g.providerName()
	}
	if provider == g.cfg.Provider && g.cfg.Server != "" {
		return g.cfg.Server
	}
	if s, ok := serverFor(g.bases[provider]); ok {
		return s.provider
	}
	return provider
}

// modelOf is ModelFor for a call of provider: a native provider's model
// is looked up at its own server (the catalog's provider of its base
// URL's host, else the provider whose API it speaks), not at the OpenAI
// base URL's.
func (g *Generator) modelOf(provider, name string) (Model, bool) {
	if !isNative(provider) {
		return g.ModelFor(name)
	}
	return resolveModelAt(g.providerNameOf(provider), name, g.bases[provider], g.cfg.Models)
}
