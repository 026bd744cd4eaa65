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
}

// servers are the hosts of the OpenAI-compatible servers demiurge knows.
// A server not listed here is named by the model's provider, if the
// catalog knows the model, else not at all.
var servers = []server{
	{host: "api.openai.com", provider: "openai"},
	{host: ".openai.azure.com", provider: "azure"},
	{host: ".cognitiveservices.azure.com", provider: "azure"},
	{host: ".services.ai.azure.com", provider: "azure"},
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
	{host: "api.groq.com", provider: "groq"},
	{host: "api.cerebras.ai", provider: "cerebras"},
	{host: "api.mistral.ai", provider: "mistral"},
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
