package realwire

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
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

// TestTokenEstimate measures how close the chat's estimate of a request's
// tokens (a token for every 4 bytes, reducer/demiurge) comes to what the
// providers counted, over the recorded requests whose responses report
// their prompt tokens. The figures are in docs/agent.md ("Long
// sessions"); the test fails if the estimate ever falls below half the
// count, which would let a request past the window.
func TestTokenEstimate(t *testing.T) {
	recs, err := LoadDir(filepath.Join("..", "..", "adapters", "llm", "testdata", "realwire"))
	if err != nil {
		t.Fatal(err)
	}
	var ratios []float64
	for _, r := range recs {
		for _, it := range r.Interactions {
			if it.Request == nil || it.Response.StatusCode() != 200 || it.Response.IsStream() {
				continue
			}
			var body struct {
				Usage struct {
					Prompt int `json:"prompt_tokens"`
					Input  int `json:"input_tokens"`
				} `json:"usage"`
			}
			if json.Unmarshal(it.Response.Body, &body) != nil {
				continue
			}
			n := max(body.Usage.Prompt, body.Usage.Input)
			if n < 50 || strings.Contains(string(it.Request.Body), "MASSIVE_TEXT") {
				continue // too small to say, or a request the recording replaced
			}
			ratios = append(ratios, float64(len(it.Request.Body)+3)/4/float64(n))
		}
	}
	if len(ratios) < 20 {
		t.Fatalf("only %d requests with usage", len(ratios))
	}
	slices.Sort(ratios)
	q := func(p float64) float64 { return ratios[int(p*float64(len(ratios)-1))] }
	t.Logf("estimate / counted over %d requests: min %.2f, p10 %.2f, median %.2f, p90 %.2f, max %.2f",
		len(ratios), ratios[0], q(0.1), q(0.5), q(0.9), ratios[len(ratios)-1])
	if ratios[0] < 0.5 {
		t.Errorf("an estimate of %.2f of the counted tokens", ratios[0])
	}
}
