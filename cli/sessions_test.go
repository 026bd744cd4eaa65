package cli

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/replay/replaytest"
)

var (
	record = flag.Bool("record", false, "record testdata/sessions again from their scripts against llmtest (review the diff)")
	update = flag.Bool("update", false, "re-derive diverging recorded sessions and rewrite their trace.txt (review the diff)")
)

// recordedSession is a recorded session of the agent: what the user says, and
// what the fake model answers.
type recordedSession struct {
	name     string
	model    string // default gpt-test, through OpenAI's Responses API
	messages []string
	turns    []llmtest.Turn
	// frozen sessions were recorded with an older version of the agent
	// and are never recorded again: they prove its worlds still replay.
	frozen bool
}

func call(name, args string) llmtest.Call { return llmtest.Call{Name: name, Arguments: args} }

// sessions are the agent's recorded sessions, under testdata/sessions.
var sessions = []recordedSession{
	// workspace-edits as demiurge/Chat@1 recorded it (sys/llm.generate@1,
	// the transcript as a list of refs): the chatv1 reducer replays it.
	{name: "v1-workspace-edits", frozen: true},
	{
		name:     "single-tool",
		messages: []string{"What is the journal head of this world?"},
		turns: []llmtest.Turn{
			{Calls: []llmtest.Call{call("introspect_journal_head", `{}`)}},
			{Text: "The world's journal head is the height and hash above."},
		},
	},
	{
		name:     "parallel-invalid",
		messages: []string{"Look around: the manifest, the workspace and the README."},
		turns: []llmtest.Turn{
			{Calls: []llmtest.Call{
				call("introspect_manifest", `{}`),
				call("workspace_list", `{"limit": "lots"}`),
				call("open_browser", `{"url": "https://example.com"}`),
				call("workspace_read", `{"path": "README.md"}`),
			}},
			{Text: "The manifest is readable; the workspace is empty, so there is no README yet."},
		},
	},
	{
		name:     "workspace-edits",
		messages: []string{"Write a plan for the project in plan.md.", "Make step 2 write tests first, and show me what changed."},
		turns: []llmtest.Turn{
			{Calls: []llmtest.Call{call("workspace_write", `{"path": "plan.md", "content": "# Plan\n1. Read the issue\n2. Write code\n3. Ship it\n"}`)}},
			{Calls: []llmtest.Call{call("bash", `{"commands": "workspace_read --path plan.md | grep -c '^[0-9]'; workspace_list | jq -r '.entries[].path'"}`)}},
			{Text: "plan.md has a three-step plan."},
			{Calls: []llmtest.Call{call("workspace_edit", `{"path": "plan.md", "old_string": "2. Write code", "new_string": "2. Write tests first, then the code"}`)}},
			{Calls: []llmtest.Call{call("workspace_diff", `{}`), call("workspace_read", `{"path": "plan.md"}`)}},
			{Text: "Step 2 now says to write tests first; the diff shows plan.md changed."},
		},
	},
	{
		name:     "demo",
		messages: []string{"Write a hello note and show it to me."},
		turns: []llmtest.Turn{
			{Calls: []llmtest.Call{
				call("introspect_journal_head", `{}`),
				call("workspace_write", `{"path": "notes/hello.md", "content": "# Hello\n\nThis note was written by the Demiurge agent.\n"}`),
			}},
			{Calls: []llmtest.Call{call("bash", `{"commands": "workspace_list --path notes | jq -r '.entries[].path'; workspace_read --path notes/hello.md"}`)}},
			{Text: "I wrote notes/hello.md in the workspace and read it back: it says hello."},
		},
	},
	// The same agent through Anthropic's Messages API and the Gemini API:
	// reasoning (signed thinking, thought signatures) sent back with each
	// round's calls, and the prompt cache read.
	{
		name:     "claude",
		model:    "claude-sonnet-5",
		messages: []string{"What does this world's manifest define?"},
		turns: []llmtest.Turn{
			{Reasoning: "The manifest first.", Calls: []llmtest.Call{call("introspect_manifest", `{}`)}},
			{Reasoning: "Its schemas and the journal head, at once.", Calls: []llmtest.Call{call("introspect_schemas", `{}`), call("introspect_journal_head", `{}`)}},
			{Reasoning: "Enough to answer.", Text: "The manifest defines the chat reducer, its plans, the tools' effects and their grants."},
		},
	},
	{
		name:     "gemini",
		model:    "gemini-3.5-flash",
		messages: []string{"What does this world's manifest define?"},
		turns: []llmtest.Turn{
			{Reasoning: "The manifest first.", Calls: []llmtest.Call{call("introspect_manifest", `{}`)}},
			{Reasoning: "Its schemas and the journal head, at once.", Calls: []llmtest.Call{call("introspect_schemas", `{}`), call("introspect_journal_head", `{}`)}},
			{Reasoning: "Enough to answer.", Text: "The manifest defines the chat reducer, its plans, the tools' effects and their grants."},
		},
	},
}

// TestRecordedSessions replays every recorded session from genesis and
// from its snapshots, byte for byte, with the code as it is, and checks its
// timeline against trace.txt. -record records them again against llmtest;
// -update re-derives a session that diverges and rewrites its trace.
func TestRecordedSessions(t *testing.T) {
	for _, s := range sessions {
		t.Run(s.name, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "sessions", s.name)
			if *record && !s.frozen {
				recordSession(t, s, dir)
			}
			replaytest.CheckGolden(t, dir, (&app{}).registry(), *update || *record)
		})
	}
}

func recordSession(t *testing.T, s recordedSession, dir string) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Script{Turns: s.turns})
	defer srv.Close()
	store := filepath.Join(t.TempDir(), "store")
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL,
		"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": srv.Root, "GEMINI_API_KEY": "gemini-test", "GOOGLE_GEMINI_BASE_URL": srv.Root}
	model := s.model
	if model == "" {
		model = "gpt-test"
	}
	for _, m := range s.messages {
		r := run(t, env, "", "--store", store, "run", "../examples/demiurge", "--model", model, "-m", m)
		if r.code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	if n := srv.Remaining(); n != 0 {
		t.Fatalf("the session used %d turns fewer than its script", n)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if r := run(t, nil, "", "--store", store, "export", "--manifest", "../examples/demiurge", dir); r.code != 0 {
		t.Fatalf("export: %s", r.stderr)
	}
	_ = os.Remove(filepath.Join(dir, "trace.txt"))
}
