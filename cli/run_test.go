package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// runAgent runs demiurge run -m against a fake model server that answers
// with turns, in a fresh store, and returns the result and the server.
func runAgent(t *testing.T, turns []llmtest.Turn, env map[string]string, args ...string) (result, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Script{Turns: turns})
	t.Cleanup(srv.Close)
	e := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test-key-123"}
	for k, v := range env {
		e[k] = v
	}
	store := filepath.Join(t.TempDir(), "store")
	full := append([]string{"--store", store, "run", filepath.Join("..", "examples", "demiurge"), "--model", "gpt-test"}, args...)
	return run(t, e, "", full...), srv
}

// TestRunOutcomes: run -m exits by how the turn ended, and says so.
func TestRunOutcomes(t *testing.T) {
	call := llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: `{}`}}}
	tests := []struct {
		name  string
		turns []llmtest.Turn
		code  int
		out   []string
	}{
		{"an answer", []llmtest.Turn{{Text: "Done."}}, exitOK, []string{"Done.", "— 1 round, "}},
		{"a refusal is an answer", []llmtest.Turn{{Refusal: "I can't help with that."}}, exitOK,
			[]string{"I can't help with that.", "— the model refused; 1 round, "}},
		{"an answer cut by the token limit", []llmtest.Turn{{Text: "The first half", Incomplete: "max_output_tokens"}}, exitIncomplete,
			[]string{"✗ the answer is incomplete: cut off by the output token limit"}},
		{"an answer cut by a filter", []llmtest.Turn{{Text: "Some", Incomplete: "content_filter"}}, exitIncomplete,
			[]string{"cut off by a content filter"}},
		{"a tool call cut with its reply is not run", []llmtest.Turn{
			{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "unfinis`}}, Incomplete: "max_output_tokens"},
			{Text: "Shorter this time."}}, exitOK,
			[]string{"✗ workspace_write", "(cut off with the reply; not run)", "your reply was cut off", "Shorter this time."}},
		{"a guard stop", []llmtest.Turn{call, call, call, {Text: "never"}}, exitGuardStop, []string{"■ turn stopped"}},
		{"a model failure", []llmtest.Turn{{Status: 401, Error: &llmtest.ErrorBody{Message: "Incorrect API key provided", Code: "invalid_api_key"}}},
			exitFailure, []string{"✗ llm.generate failed: llm: openai-responses: authentication failed (HTTP 401", "Incorrect API key provided"}},
		{"no usage reported", []llmtest.Turn{{Text: "hi", NoUsage: true}}, exitOK,
			[]string{"usage unknown for 1 call(s): the provider reported none", "cost unknown"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := runAgent(t, tc.turns, nil, "-m", "go")
			if r.code != tc.code {
				t.Errorf("exit %d; want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, s := range tc.out {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

// TestRunRequest: what run sends follows its flags and what it knows of
// the model.
func TestRunRequest(t *testing.T) {
	answer := []llmtest.Turn{{Text: "ok"}}

	// Streaming by default; --no-stream asks for one whole answer.
	_, srv := runAgent(t, answer, nil, "-m", "go")
	if req := srv.Requests()[0]; !req.Stream {
		t.Errorf("a default run did not stream: %s", req.Body)
	}
	r, srv := runAgent(t, answer, nil, "--no-stream", "-m", "go")
	if req := srv.Requests()[0]; req.Stream || r.code != exitOK || !strings.Contains(r.stdout, "ok") {
		t.Errorf("--no-stream sent %s; exit %d\n%s", req.Body, r.code, r.stdout)
	}

	// Without a key, none is sent; a server that wants one says so.
	r, srv = runAgent(t, []llmtest.Turn{{Status: 401, Error: &llmtest.ErrorBody{Message: "Missing Authentication header"}}},
		map[string]string{"OPENAI_API_KEY": ""}, "-m", "go")
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("no key set, Authorization %q sent", h)
	}
	if r.code != exitFailure || !strings.Contains(r.stdout, "no API key was sent: set OPENAI_API_KEY") {
		t.Errorf("exit %d\n%s", r.code, r.stdout)
	}

	// gpt-5-mini on Chat Completions: max_completion_tokens, no
	// temperature; a temperature flag for it is a usage error.
	_, srv = runAgent(t, answer, nil, "--llm", "openai-chat", "--model", "gpt-5-mini", "-m", "go")
	body := srv.Requests()[0].JSON()
	if _, ok := body["max_tokens"]; ok || body["max_completion_tokens"] != 4096.0 {
		t.Errorf("gpt-5-mini on Chat: %s", srv.Requests()[0].Body)
	}
	r, _ = runAgent(t, answer, nil, "--llm", "openai-chat", "--model", "gpt-5-mini", "--temperature", "0.3", "-m", "go")
	if r.code != exitUsage || !strings.Contains(r.stderr, "does not take a temperature") {
		t.Errorf("--temperature for gpt-5-mini: exit %d\n%s", r.code, r.stderr)
	}

	// --model-option: a price for a model the table does not know.
	r, _ = runAgent(t, []llmtest.Turn{{Text: "ok", Usage: &llmtest.Usage{Input: 1_000_000, Output: 1_000_000}}}, nil,
		"--model-option", "price_input=1", "--model-option", "price_output=2", "-m", "go")
	if !strings.Contains(r.stdout, "$3.0000") {
		t.Errorf("a priced model's turn:\n%s", r.stdout)
	}
	r, _ = runAgent(t, answer, nil, "--model-option", "colour=blue", "-m", "go")
	if r.code != exitUsage || !strings.Contains(r.stderr, `unknown model option "colour"`) {
		t.Errorf("a bad --model-option: exit %d\n%s", r.code, r.stderr)
	}
}

// TestRunCompacts: /compact at the prompt compacts the chat's transcript;
// a model whose window the next request would overfill makes the chat
// compact by itself; trace shows both.
func TestRunCompacts(t *testing.T) {
	big := llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_manifest", Arguments: `{}`}}}
	calls := 0
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		if strings.Contains(string(r.Body), "summarizing the earlier part of a conversation") {
			return llmtest.Turn{Text: "SUMMARY: the manifest was read."}
		}
		if calls++; calls <= 6 {
			return big
		}
		return llmtest.Turn{Text: "Done reading."}
	})
	t.Cleanup(srv.Close)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k3y-k3y-k3y"}
	store := filepath.Join(t.TempDir(), "store")
	manifest := filepath.Join("..", "examples", "demiurge")
	// A request is some 7,000 tokens at first (the tools, the system
	// prompt) and each round adds about 1,100 (the manifest): a window of
	// 11,000 holds four rounds, not six.
	r := run(t, env, "read the manifest six times\n/compact\n", "--store", store, "run", manifest, "--model", "gpt-test",
		"--model-option", "context_window=11000", "--max-repeats", "10")
	if r.code != exitOK || strings.Count(r.stdout, "⇢ compacted transcript items") < 2 || !strings.Contains(r.stdout, "Done reading.") ||
		strings.Contains(r.stdout, "SUMMARY") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, req := range srv.Requests() {
		if n := len(req.Body) / 4; n > 11000 {
			t.Errorf("request %d holds about %d tokens, over the window", req.Seq, n)
		}
	}
	tr := run(t, env, "", "--store", store, "trace")
	if !strings.Contains(tr.stdout, "compaction call: gpt-test") || !strings.Contains(tr.stdout, "note: compacted transcript items") {
		t.Errorf("trace:\n%s", tr.stdout)
	}
	rp := run(t, env, "", "--store", store, "replay", "--manifest", manifest)
	if rp.code != exitOK {
		t.Errorf("replay: exit %d\n%s%s", rp.code, rp.stdout, rp.stderr)
	}
}

// TestRunNoManifest: a MANIFEST that is not there is named, and no store
// is made.
func TestRunNoManifest(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "s")
	r := run(t, nil, "", "--store", dir, "run", "no-such-world", "--llm", "cassette:x", "-m", "hi")
	if want := "demiurge: run: load AIR: stat no-such-world: no such file or directory\n"; r.code != exitFailure || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", r.code, r.stderr, exitFailure, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the store %s was made: %v", dir, err)
	}
}

// TestNoAPIKey: without a key or a base URL, run, approve and deny say
// which flags reach a model (not the Go API's names), under their own
// names, before they make a store. (Listing the calls that wait, approve
// without CALL, only reads: it needs no model.)
func TestNoAPIKey(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "../examples/demiurge", "-m", "hi"},
		{"approve", "../examples/demiurge", "call_1"},
		{"deny", "../examples/demiurge", "call_1"},
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "s")
			r := run(t, nil, "", append([]string{"--store", dir}, args...)...)
			want := "demiurge: " + args[0] + ": no API key: set OPENAI_API_KEY (or point --base-url at an OpenAI-compatible server, or use --llm cassette:DIR for the offline demo)\n"
			if r.code != exitFailure || r.stderr != want {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", r.code, r.stderr, exitFailure, want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the store %s was made: %v", dir, err)
			}
		})
	}
}

// TestRunToolChoice: --tool-choice NAME must name a tool the model is
// offered; another is a usage error before any model call.
func TestRunToolChoice(t *testing.T) {
	t.Parallel()
	r, srv := runAgent(t, []llmtest.Turn{{Text: "ok"}}, nil, "--tool-choice", "workspace_lst", "-m", "go")
	if want := "demiurge: --tool-choice workspace_lst: the model is offered no tool workspace_lst; want auto, none, required or one of: "; r.code != exitUsage || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, "workspace_list") {
		t.Errorf("exit %d, stderr %q; want exit %d, stderr starting %q", r.code, r.stderr, exitUsage, want)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model calls; want none", n)
	}
	r, srv = runAgent(t, []llmtest.Turn{{Calls: []llmtest.Call{{Name: "workspace_list", Arguments: `{}`}}}, {Text: "ok"}}, nil, "--tool-choice", "workspace_list", "-m", "go")
	if r.code != exitOK || len(srv.Requests()) != 2 {
		t.Fatalf("--tool-choice workspace_list: exit %d, %d model calls\n%s%s", r.code, len(srv.Requests()), r.stdout, r.stderr)
	}
	if tc := srv.Requests()[0].JSON()["tool_choice"]; !strings.Contains(fmt.Sprint(tc), "workspace_list") {
		t.Errorf("the first call's tool_choice is %v; want workspace_list", tc)
	}
}
