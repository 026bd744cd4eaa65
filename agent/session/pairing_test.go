package session_test

import (
	"context"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/world"
)

// TestOwnToolInScript: in the recorded weather session (README's
// mydemiurge example), the model calls the program's own tool get_weather
// directly, then a bash script that runs it as a command. Each call gets
// its own receipt, timing and commands: the script's command was shown on
// the direct call, with the script's receipt and timing, and the script
// had none.
func TestOwnToolInScript(t *testing.T) {
	turns := read(t, "../../examples/embed/testdata/session")
	if len(turns) != 1 || len(turns[0].Rounds) != 3 {
		t.Fatalf("turns %+v", turns)
	}
	direct, bash := turns[0].Rounds[0].Calls[0], turns[0].Rounds[1].Calls[0]
	// The receipts, as the journal holds them (trace.txt of the bundle):
	// seq 16 answers the direct call's custom.call, seq 30 the script's
	// scripted.run.
	if direct.Tool != "get_weather" || direct.Seq != 16 || len(direct.Commands) != 0 || len(direct.SubCalls) != 0 || direct.EndNS == 0 {
		t.Errorf("the direct call: seq %d, commands %+v, end %d; want seq 16, no commands", direct.Seq, direct.Commands, direct.EndNS)
	}
	if bash.Tool != "bash" || bash.Seq != 30 || len(bash.Commands) != 1 || bash.Commands[0].Tool != "get_weather" ||
		bash.Commands[0].Arguments != `{"city":"Oslo"}` || bash.EndNS <= bash.StartNS {
		t.Errorf("the script: seq %d, commands %+v, start %d, end %d; want seq 30, its get_weather command, timed", bash.Seq, bash.Commands, bash.StartNS, bash.EndNS)
	}
	if bash.StartNS <= direct.EndNS {
		t.Errorf("the script starts at %d, before the direct call ended at %d", bash.StartNS, direct.EndNS)
	}
}

// TestAssistantInRound: what the model says in a round with tool calls
// is that round's, and the answer the last round's, not all of it after
// the rounds.
func TestAssistantInRound(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Let me look at the journal first.", Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: `{}`}}},
		{Text: "Now the workspace.", Calls: []llmtest.Call{{Name: "workspace_list", Arguments: `{}`}}},
		{Text: "All done."},
	}})
	defer srv.Close()
	w, err := agent.Open(t.Context(), "../../examples/demiurge", agent.WithModel(agent.Model{Name: "gpt-test", BaseURL: srv.URL, APIKey: "sk-test"}),
		agent.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, err := range w.Chat("c").Send(t.Context(), "look around") {
		if err != nil {
			t.Fatal(err)
		}
	}
	r := session.NewReader(w.Storage().CAS())
	if err := readAll(t.Context(), w.Storage(), w.Name(), r); err != nil {
		t.Fatal(err)
	}
	turns := r.Turns()
	if len(turns) != 1 || len(turns[0].Rounds) != 3 {
		t.Fatalf("turns %+v", turns)
	}
	for i, want := range []string{"Let me look at the journal first.", "Now the workspace.", "All done."} {
		if got := turns[0].Rounds[i].Assistant; len(got) != 1 || got[0] != want {
			t.Errorf("round %d says %q; want %q", i+1, got, want)
		}
	}
}

func readAll(ctx context.Context, st world.Storage, name string, r *session.Reader) error {
	return st.Journal().Read(ctx, name, 1, func(rec journal.Record) error { return r.Record(rec) })
}
