package effects

import (
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
)

func gateCatalog(t *testing.T) *schema.Catalog {
	t.Helper()
	src := `[{"$kind":"manifest","air_version":"1","schemas":[],"modules":[],"plans":[],
	 "effects":[{"name":"sys/blob.put@1"},{"name":"sys/llm.generate@1"},{"name":"sys/http.request@1"},{"name":"sys/custom.call@1"}],"caps":[],"policies":[{"name":"t/p@1"}],
	 "secrets":[{"name":"llm/api@1"}],
	 "defaults":{"policy":"t/p@1","cap_grants":[
	   {"name":"blob","cap":"sys/blob@1","params":{}},
	   {"name":"llm","cap":"sys/llm.basic@1","params":{"models":["m1"],"max_tokens":100,"tools_allow":["t1"]}},
	   {"name":"llm2","cap":"sys/llm.basic@1","params":{}},
	   {"name":"custom","cap":"sys/custom@1","params":{}},
	   {"name":"weather","cap":"sys/custom@1","params":{"tools_allow":["get_weather"]}},
	   {"name":"web","cap":"sys/http.out@1","params":{"hosts":["*.example.com","example.com"],"methods":["GET"],"ports":[443],"path_prefixes":["/api/"]}}]}},
	 {"$kind":"defpolicy","name":"t/p@1","rules":[{"when":{"origin_kind":"reducer","effect_kind":"blob.put"},"decision":"allow"},{"when":{"origin_kind":"plan"},"decision":"allow"}]},
	 {"$kind":"defsecret","name":"llm/api@1","binding_id":"env:TEST_KEY","allowed_caps":["llm"]}]`
	cat, err := schema.LoadSources([]schema.Source{{Name: "t.air.json", Data: []byte(src)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestGate(t *testing.T) {
	g := NewGate(gateCatalog(t))
	plan := Origin{Kind: "plan", Name: "t/p@1", PlanID: 1, Step: "s"}
	red := Origin{Kind: "reducer", Name: "t/r@1"}
	llm := func(model string, max uint64, choice schema.Value, key schema.Value) schema.Value {
		return schema.Record("provider", "openai-responses", "model", model, "max_tokens", max,
			"message_refs", []schema.Value{"blake3:" + zeros}, "tool_choice", choice, "api_key", key)
	}
	secret := schema.Variant("secret", schema.Record("alias", "llm/api", "version", uint64(1)))
	http := func(method, url string) schema.Value {
		return schema.Record("method", method, "url", url, "headers", schema.NewMap())
	}
	tests := []struct {
		name  string
		req   Request
		stage string
	}{
		{"bytes params", Request{Kind: "blob.put", Grant: "blob", Origin: red, Params: schema.Record("blob_ref", "blake3:"+zeros, "bytes", []byte("hi"))}, StageAllowed},
		{"blob from a plan", Request{Kind: "blob.put", Grant: "blob", Origin: plan, Params: schema.Record("blob_ref", "blake3:"+zeros, "bytes", []byte("hi"))}, StageScope},
		{"llm ok with secret", Request{Kind: "llm.generate", Grant: "llm", Origin: plan, Params: llm("m1", 50, nil, secret)}, StageAllowed},
		{"secret with another grant", Request{Kind: "llm.generate", Grant: "llm2", Origin: plan, Params: llm("m1", 50, nil, secret)}, StageSecret},
		{"llm model", Request{Kind: "llm.generate", Grant: "llm", Origin: plan, Params: llm("m2", 50, nil, nil)}, StageCap},
		{"llm max tokens", Request{Kind: "llm.generate", Grant: "llm", Origin: plan, Params: llm("m1", 500, nil, nil)}, StageCap},
		{"llm tool choice", Request{Kind: "llm.generate", Grant: "llm", Origin: plan, Params: llm("m1", 50, schema.Variant("Tool", schema.Record("name", "t2")), nil)}, StageCap},
		{"http ok", Request{Kind: "http.request", Grant: "web", Origin: plan, Params: http("GET", "https://example.com/api/x")}, StageAllowed},
		{"http subdomain", Request{Kind: "http.request", Grant: "web", Origin: plan, Params: http("GET", "https://a.example.com/api/x")}, StageAllowed},
		{"http host", Request{Kind: "http.request", Grant: "web", Origin: plan, Params: http("GET", "https://evil.com/api/x")}, StageCap},
		{"http method", Request{Kind: "http.request", Grant: "web", Origin: plan, Params: http("POST", "https://example.com/api/x")}, StageCap},
		{"http port", Request{Kind: "http.request", Grant: "web", Origin: plan, Params: http("GET", "https://example.com:8443/api/x")}, StageCap},
		{"http path", Request{Kind: "http.request", Grant: "web", Origin: plan, Params: http("GET", "https://example.com/admin")}, StageCap},
		{"http dotdot", Request{Kind: "http.request", Grant: "web", Origin: plan, Params: http("GET", "https://example.com/api/../admin")}, StageCap},
		{"wrong grant type", Request{Kind: "http.request", Grant: "blob", Origin: plan, Params: http("GET", "https://example.com/api/x")}, StageGrant},
		{"no grant", Request{Kind: "http.request", Grant: "nope", Origin: plan, Params: http("GET", "https://example.com/api/x")}, StageGrant},
		{"bad params", Request{Kind: "http.request", Grant: "web", Origin: plan, Params: schema.Record("method", "GET")}, StageParams},
		{"custom tool", Request{Kind: "custom.call", Grant: "custom", Origin: plan, Params: schema.Record("tool", "anything", "arguments_json", "{}")}, StageAllowed},
		{"custom tool allowed", Request{Kind: "custom.call", Grant: "weather", Origin: plan, Params: schema.Record("tool", "get_weather", "arguments_json", "{}")}, StageAllowed},
		{"custom tool not allowed", Request{Kind: "custom.call", Grant: "weather", Origin: plan, Params: schema.Record("tool", "send_mail", "arguments_json", "{}")}, StageCap},
		{"unknown kind", Request{Kind: "mail.send", Grant: "web", Origin: plan}, StageKind},
		{"policy no match", Request{Kind: "blob.put", Grant: "blob", Origin: Origin{Kind: "reducer", Name: "x"}, Params: schema.Record("blob_ref", "blake3:"+zeros, "bytes", []byte{})}, StageAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := g.Check(tc.req)
			if d.Stage != tc.stage {
				t.Fatalf("stage %s (%s); want %s", d.Stage, d.Reason, tc.stage)
			}
			if d.Allowed != (tc.stage == StageAllowed) {
				t.Fatalf("allowed = %v", d.Allowed)
			}
		})
	}
}

func TestNoPolicyDenies(t *testing.T) {
	src := `[{"$kind":"manifest","air_version":"1","schemas":[],"modules":[],"plans":[],"effects":[{"name":"sys/http.request@1"}],"caps":[],"policies":[],
	 "defaults":{"cap_grants":[{"name":"web","cap":"sys/http.out@1","params":{}}]}}]`
	cat, err := schema.LoadSources([]schema.Source{{Name: "t.air.json", Data: []byte(src)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := NewGate(cat).Check(Request{Kind: "http.request", Grant: "web", Origin: Origin{Kind: "plan", Name: "p"},
		Params: schema.Record("method", "GET", "url", "https://x/", "headers", schema.NewMap())})
	if d.Allowed || d.Stage != StagePolicy {
		t.Fatalf("%+v", d)
	}
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"
