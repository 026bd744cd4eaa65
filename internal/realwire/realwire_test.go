package realwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// corpus is the repository's recordings.
var corpus = filepath.Join("..", "..", "adapters", "llm", "testdata", "realwire")

// TestRefusalRules: every request a provider accepted in the corpus (the
// repository's recordings, and the extended corpus when DEMIURGE_REALWIRE
// names it) passes the rules, and each rule refuses the request that real
// traffic shows the provider refusing.
func TestRefusalRules(t *testing.T) {
	recs, extended, err := LoadCorpus(corpus)
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
			if err := r.Refuse(it.Request.Body); err != nil {
				t.Errorf("%s interaction %d: the provider accepted it, the rules refuse it: %v", r.Name, i, err)
			}
		}
	}
	t.Logf("%d recordings (extended corpus: %v), %d accepted requests", len(recs), extended, accepted)
	// 133 with the 63 recordings of the extended corpus (internal/realwire/mkcorpus).
	if want := map[bool]int{false: 25, true: 120}[extended]; accepted < want {
		t.Errorf("only %d accepted requests; want at least %d", accepted, want)
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
// sessions"). The figures are over the whole corpus: without the
// extended one the test skips.
//
// The bytes measured are the body as sent (compact JSON, as demiurge
// sends it), not as the recording's file lays it out: the files are
// indented, and their indentation made the estimate look up to twice as
// high as it is (the minimum read 0.83 of the count with it, 0.34 without).
//
// The count compared is what the request's bytes account for: Anthropic
// adds a tool-use system prompt of its own to every request that carries
// tools (anthropicToolPrompt), which no byte of the request shows. The
// chat adds it to its estimate from its first call on
// (demiurge.Settings.ToolPromptTokens, which the agent sets from
// llm.ToolPromptTokens); its later calls start from the provider's count,
// which has it. Other servers add tool instructions of their own too
// (the chat templates of DeepSeek and of Qwen on Cerebras: some 200
// tokens), undocumented: a request with tools may be counted that much
// over its bytes/4 whatever its size, so small requests read low (a
// 414-byte request with one tool, 304 tokens counted, estimated at 0.34
// of that). That is not what lets a request past a window: the test fails
// if an estimate ever falls more than maxShortfall tokens short of the
// count, or, for a request past 1,000 tokens, below half of it.
func TestTokenEstimate(t *testing.T) {
	recs, extended, err := LoadCorpus(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if !extended {
		t.Skip(NeedExtended)
	}
	const maxShortfall = 300 // tokens
	var ratios []float64
	shortest, shortWhere := 0, ""
	for _, r := range recs {
		for i, it := range r.Interactions {
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
			if r.API == "anthropic" {
				n -= anthropicToolPrompt(it.Request.Body)
			}
			if n < 50 || strings.Contains(string(it.Request.Body), "MASSIVE_TEXT") {
				continue // too small to say, or a request the recording replaced
			}
			var sent bytes.Buffer
			if err := json.Compact(&sent, it.Request.Body); err != nil {
				t.Fatalf("%s: the request body: %v", r.Name, err)
			}
			estimate := (sent.Len() + 3) / 4
			ratios = append(ratios, float64(estimate)/float64(n))
			where := fmt.Sprintf("%s interaction %d (%d bytes, %d tokens counted, %d estimated)", r.Name, i, sent.Len(), n, estimate)
			if n-estimate > shortest {
				shortest, shortWhere = n-estimate, where
			}
			if n-estimate > maxShortfall {
				t.Errorf("%s: the estimate is %d tokens short of the count", where, n-estimate)
			}
			if n > 1000 && 2*estimate < n {
				t.Errorf("%s: the estimate is under half the count", where)
			}
		}
	}
	if len(ratios) < 20 {
		t.Fatalf("only %d requests with usage", len(ratios))
	}
	slices.Sort(ratios)
	q := func(p float64) float64 { return ratios[int(p*float64(len(ratios)-1))] }
	t.Logf("estimate / counted over %d requests of %d recordings: min %.2f, p10 %.2f, median %.2f, p90 %.2f, max %.2f; most short: %d tokens, %s",
		len(ratios), len(recs), ratios[0], q(0.1), q(0.5), q(0.9), ratios[len(ratios)-1], shortest, shortWhere)
}

// anthropicToolPrompt is the size of the system prompt Anthropic adds to
// a Messages request that carries tools, as its documentation gives it
// for the Claude 3.7 and 4 models the corpus records ("Tool use system
// prompt token count", docs.anthropic.com/en/docs/tool-use-pricing-and-tokens):
// 346 tokens when tool_choice is auto or none (or absent), 313 when it is
// any or a named tool; none without tools. The input_tokens the answer
// reports include it.
func anthropicToolPrompt(request []byte) int {
	var req struct {
		Tools      []json.RawMessage `json:"tools"`
		ToolChoice struct {
			Type string `json:"type"`
		} `json:"tool_choice"`
	}
	if json.Unmarshal(request, &req) != nil || len(req.Tools) == 0 {
		return 0
	}
	switch req.ToolChoice.Type {
	case "any", "tool":
		return 313
	}
	return 346
}

// TestExtendedCorpus: DEMIURGE_REALWIRE adds its recordings to the
// repository's, Find looks there for what the repository lacks, a name
// in both is an error, and a relative path is refused.
func TestExtendedCorpus(t *testing.T) {
	const name = "pydantic-ai/openai_responses_400_temperature"
	b, err := os.ReadFile(filepath.Join(corpus, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	repo, ext := t.TempDir(), t.TempDir()
	write := func(dir, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(repo, "a/in_repo")
	write(ext, "b/extended")

	t.Setenv(Env, "")
	if recs, extended, err := LoadCorpus(repo); err != nil || extended || len(recs) != 1 {
		t.Fatalf("unset: %d recordings, extended %v, %v", len(recs), extended, err)
	}
	if _, err := Find(repo, "b/extended"); err == nil || !strings.Contains(err.Error(), Env) {
		t.Errorf("unset: Find of an extended recording: %v", err)
	}

	t.Setenv(Env, ext)
	recs, extended, err := LoadCorpus(repo)
	if err != nil || !extended || len(recs) != 2 || recs[0].Name != "a/in_repo" || recs[1].Name != "b/extended" {
		t.Fatalf("set: %v, extended %v, %v", recs, extended, err)
	}
	if recs[1].File != filepath.Join(ext, "b", "extended.json") {
		t.Errorf("File %s", recs[1].File)
	}
	for _, n := range []string{"a/in_repo", "b/extended"} {
		if r, err := Find(repo, n); err != nil || r.Name != n {
			t.Errorf("Find %s: %v", n, err)
		}
	}
	if _, err := Find(repo, "b/missing"); err == nil || !strings.Contains(err.Error(), "the extended corpus "+ext) || !strings.Contains(err.Error(), "lacks it") {
		t.Errorf("Find of a recording the extended corpus lacks: %v", err)
	}

	write(ext, "a/in_repo")
	if _, _, err := LoadCorpus(repo); err == nil {
		t.Error("a name in both corpora is not an error")
	}

	t.Setenv(Env, filepath.Join("..", "x"))
	if _, _, err := LoadCorpus(repo); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("a relative %s: %v", Env, err)
	}
}
