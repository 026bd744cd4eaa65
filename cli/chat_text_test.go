package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestRunTextSmall: run's words for what it shows. A tool output longer
// than the event's preview counts its lines in the whole output; /show
// says what N may be when the last turn made no calls, or one; a turn
// that max_rounds 1 stops says "1 model round".
func TestRunTextSmall(t *testing.T) {
	// 37 lines of 40 bytes: the event holds the first 256 bytes.
	script := `for i in $(seq 37); do printf 'line %02d of the output, padded to 40 bytes\n' $i | cut -c1-39; done`
	r, _ := runAgent(t, []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "bash", Arguments: jsonArgs(t, map[string]string{"commands": script})}}},
		{Text: "Done."},
	}, nil, "-m", "go")
	if r.code != exitOK || !strings.Contains(r.stdout, "    │ … 34 lines more (/show 1)\n") {
		t.Errorf("37 lines, 3 shown: exit %d; want \"… 34 lines more (/show 1)\"\n%s%s", r.code, r.stdout, r.stderr)
	}

	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "No calls."},
		{Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: `{}`}}},
		{Text: "One call."},
	}})
	defer srv.Close()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test"}
	store := t.TempDir()
	r = run(t, env, "hi\n/show 1\nmore\n/show 2\n", "--store", store, "run", "../examples/demiurge", "--model", "gpt-test")
	for _, want := range []string{
		"  /show N shows the output of the last turn's tool call N: the last turn made no tool calls\n",
		"  /show N: N is a tool call of the last turn, which made one: /show 1\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "1 to 0") {
		t.Errorf("/show says 1 to 0:\n%s", r.stdout)
	}

	call := llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: `{}`}}}
	r, _ = runAgent(t, []llmtest.Turn{call, {Text: "never"}}, nil, "--max-rounds", "1", "-m", "go")
	if r.code != exitGuardStop || !strings.Contains(r.stdout, "■ turn stopped: the turn reached 1 model round (max_rounds)") {
		t.Errorf("max_rounds 1: exit %d\n%s", r.code, r.stdout)
	}
	store = t.TempDir()
	srv2 := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{call, {Text: "never"}}})
	defer srv2.Close()
	env["OPENAI_BASE_URL"] = srv2.URL
	run(t, env, "", "--store", store, "run", "../examples/demiurge", "--model", "gpt-test", "--max-rounds", "1", "-m", "go")
	if tr := run(t, nil, "", "--store", store, "trace"); !strings.Contains(tr.stdout, "stopped: the turn reached 1 model round (max_rounds)") {
		t.Errorf("trace of a max_rounds 1 stop:\n%s", tr.stdout)
	}
}

// jsonArgs is v as a tool call's JSON arguments.
func jsonArgs(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
