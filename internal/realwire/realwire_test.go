package realwire

import (
	"path/filepath"
	"testing"
)

// TestRefusalRules: every request a provider accepted in the corpus
// passes the rules, and each rule refuses the request that real traffic
// shows the provider refusing.
func TestRefusalRules(t *testing.T) {
	recs, err := LoadDir(filepath.Join("..", "..", "adapters", "llm", "testdata", "realwire"))
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for _, r := range recs {
		for i, it := range r.Interactions {
			if it.Request == nil || it.Response.StatusCode() != 200 {
				continue
			}
			accepted++
			if err := Refusal(r.Vendor, r.API, it.Request.Body); err != nil {
				t.Errorf("%s interaction %d: the provider accepted it, the rules refuse it: %v", r.Name, i, err)
			}
		}
	}
	if accepted < 50 {
		t.Errorf("only %d accepted requests", accepted)
	}
	refused := []struct{ vendor, api, body string }{
		{"openai", "chat", `{"model":"gpt-5-mini","max_tokens":4096,"messages":[]}`},
		{"azure", "chat", `{"model":"o3-mini","temperature":0.2,"messages":[]}`},
		{"openai", "responses", `{"model":"gpt-4o","include":["reasoning.encrypted_content"],"input":"hi"}`},
		{"deepseek", "chat", `{"model":"deepseek-reasoner","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","tool_call_id":"c","content":"x"}]}`},
	}
	for _, tc := range refused {
		if Refusal(tc.vendor, tc.api, []byte(tc.body)) == nil {
			t.Errorf("%s %s %s: not refused", tc.vendor, tc.api, tc.body)
		}
	}
}
