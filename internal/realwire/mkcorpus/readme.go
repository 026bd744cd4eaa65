package main

import (
	"bytes"
	"fmt"
	"strings"
)

// readme is the corpus's README.md: what it is, how it was made, and the
// recordings it holds with their sources.
func readme(m *Manifest) []byte {
	var b bytes.Buffer
	history, converted := m.counts()
	fmt.Fprintf(&b, `# The extended realwire corpus

Recordings of real HTTP traffic with model providers, from public repositories' test cassettes and
fixtures, in the realwire format (demiurge's adapters/llm/testdata/realwire/README.md says the format,
its conventions, and what each kind of recording covers). They are fetched data, so the demiurge
repository does not keep them: the tests read them from the directory DEMIURGE_REALWIRE names
(.ci/run sets it when the corpus is where its DEMIURGE_REALWIRE step looks).

This file was written by demiurge's internal/realwire/mkcorpus from its manifest
(internal/realwire/mkcorpus/manifest.json); do not edit it, change the manifest and run it again.
The corpus holds %d recordings:

- %d restored, with their golden files, from demiurge's history (commit %s, directory %s: they were
  in the repository until commit 36f398d took them out);
- %d converted from pydantic/pydantic-ai's cassettes (vcrpy YAML, MIT) by internal/realwire/vcr.

Each NAME.golden beside a recording is what demiurge's llm adapter makes of its responses, written by

    DEMIURGE_REALWIRE=$PWD go test ./adapters/llm -run TestRealwire -update   # in demiurge, PWD = this directory

and reviewed. The restored golden files are those of %s; -update rewrites them in the adapter's
present form. Reviewed on 2026-11-29 (session rw2, demiurge after commit 7f0105b): every difference
came from a deliberate change of the adapter since then, none from a regression:

- usage is sys/LlmTokenUsage@2's (commit 4fbf182): Prompt, Completion, Cached, Reasoning became
  input, output, cache_read, reasoning, with cache_write beside them (0 in all of these); every
  count is the same;
- each priced call says where its cost came from (cost_source, 4fbf182): "priced from catwalk
  v0.52.1 (PROVIDER) for MODEL" (model facts from Charm's catwalk catalog, ae5c9c1, reworded in
  068c11a) or "reported by the provider (usage.cost)"; every cost already known is unchanged, except:
- DeepSeek's deepseek-chat answers as deepseek-v4-flash and is priced as the model that answered
  (catwalk: 0.14/0.28 USD per million in/out, 0.0028 cached): ruby_llm's two DeepSeek recordings,
  6 calls, 153→83, 85→43, 125→67, 38→16, 69→35, 50→21 µUSD;
- 5 costs were unknown and are known: claude-sonnet-4-5 through Anthropic's OpenAI-compatible
  endpoint (276 µUSD), gpt-5.4 on Azure (120), gpt-5.5 (980, 980), and OpenRouter's own usage.cost
  of 0.00005 USD (50);
- OpenAI's insufficient_quota in a stream's error event is its own class, quota, not failed
  (commit 878a268).

The pydantic-ai recordings converted here differ from those first converted by the sessions that
added them (which are no longer kept) in two ways, neither read by any test: the JSON is indented
by 2 (the other converters wrote 1), and a request keeps the headers the format keeps
(content-type and accept, as pydantic-ai recorded them), where those sessions dropped accept (and,
for openrouter_usage_cost, openrouter_gpt5mini_reasoning_details and
zai_glm47_preserved_thinking_round_trip, every request header). Every body, status, response
header, key order and number literal is the same. The converter reproduces byte for byte the
pydantic-ai recordings restored from history and those the repository keeps
(mkcorpus -check says so).

| file | made | source repository | commit | path in it | vendor | api |
|---|---|---|---|---|---|---|
`, len(m.Extended), history, m.Restore.Commit, m.Restore.Dir, converted, m.Restore.Commit)
	for _, e := range m.Extended {
		how := "restored"
		if e.From == "cassette" {
			how = "converted"
			if len(e.Interactions) > 0 {
				var s []string
				for _, i := range e.Interactions {
					s = append(s, fmt.Sprint(i+1))
				}
				how += " (interaction " + strings.Join(s, ", ") + ")"
			}
		}
		fmt.Fprintf(&b, "| `%s.json` | %s | %s | `%s` | `%s` | %s | %s |\n", e.Name, how, e.Source.Repo, e.Source.Commit, e.Source.Path, e.Vendor, e.API)
	}
	return b.Bytes()
}
