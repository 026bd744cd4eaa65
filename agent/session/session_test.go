package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/builtin"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/world"
)

// TestReadDemo reads the recorded demo session: one turn of three rounds,
// its tool calls with their results, the bash script's commands, and the
// answer.
func TestReadDemo(t *testing.T) {
	b, err := replay.Read("../../testdata/sessions/demo")
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Storage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := session.NewReader(st.CAS())
	if err := st.Journal().Read(t.Context(), b.Manifest.World, 1, r.Record); err != nil {
		t.Fatal(err)
	}
	if !r.IsChat() {
		t.Fatal("the demo is not read as a chat")
	}
	turns := r.Turns()
	if len(turns) != 1 {
		t.Fatalf("%d turns; want 1", len(turns))
	}
	tu := turns[0]
	if tu.Outcome != "answer" || len(tu.Rounds) != 3 || tu.User != "Write a hello note and show it to me." {
		t.Fatalf("turn %+v", tu)
	}
	calls := tu.Rounds[0].Calls
	if len(calls) != 2 || calls[0].Tool != "introspect_journal_head" || calls[1].Tool != "workspace_write" || calls[1].Status != "ok" {
		t.Errorf("round 1 calls: %+v %+v", calls[0], calls[1])
	}
	bash := tu.Rounds[1].Calls[0]
	if bash.Tool != "bash" || len(bash.SubCalls) != 2 {
		t.Errorf("round 2: %+v; want a bash script of two commands", bash)
	}
	for i, r := range tu.Rounds {
		if r.Model == nil || r.Model.Error != "" {
			t.Errorf("round %d has no model call: %+v", i+1, r.Model)
		}
	}
	var out bytes.Buffer
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var back session.Turn
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.RequestID != 1 {
		t.Errorf("WriteJSON: %v %s", err, out.String())
	}
}

// TestChatManifest: the demo's first record, its Manifest, already says
// it is an agent world (a follower shows it as turns before its first
// message); a world without the chat reducer is not.
func TestChatManifest(t *testing.T) {
	b, err := replay.Read("../../testdata/sessions/demo")
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Storage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := session.NewReader(st.CAS())
	err = st.Journal().Read(t.Context(), b.Manifest.World, 1, func(rec journal.Record) error {
		if err := r.Record(rec); err != nil {
			return err
		}
		return errStop
	})
	if err != errStop {
		t.Fatal(err)
	}
	if !r.ChatManifest() || r.IsChat() {
		t.Errorf("after the Manifest record: ChatManifest %v, IsChat %v; want true, false", r.ChatManifest(), r.IsChat())
	}

	for _, tc := range []struct {
		module string
		want   bool
	}{{"counter/Counter@1", false}, {"demiurge/Chat@2", true}, {"demiurge/Chat@3", true}} {
		mem := cas.NewMemory()
		ref, err := cas.PutNode(t.Context(), mem, map[string]any{"modules": []map[string]any{{"name": tc.module}}})
		if err != nil {
			t.Fatal(err)
		}
		payload, err := cas.Marshal(map[string]any{"manifest": ref.String()})
		if err != nil {
			t.Fatal(err)
		}
		r := session.NewReader(mem)
		if err := r.Record(journal.Record{Seq: 1, Kind: world.KindManifest, Payload: payload}); err != nil {
			t.Fatal(err)
		}
		if r.ChatManifest() != tc.want {
			t.Errorf("a manifest with module %s: ChatManifest %v; want %v", tc.module, r.ChatManifest(), tc.want)
		}
	}
}

var errStop = errors.New("stop")

// read reads a recorded session's turns.
func read(t *testing.T, dir string) []*session.Turn {
	t.Helper()
	b, err := replay.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Storage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := session.NewReader(st.CAS())
	if err := st.Journal().Read(t.Context(), b.Manifest.World, 1, r.Record); err != nil {
		t.Fatal(err)
	}
	return r.Turns()
}

// TestCommandsAndCommits: a bash call lists its commands with their
// arguments, and a call that writes the workspace the version it made and
// the paths it changed, from the version before it.
func TestCommandsAndCommits(t *testing.T) {
	turns := read(t, "../../testdata/sessions/workspace-edits")
	write, bash, edit := turns[0].Rounds[0].Calls[0], turns[0].Rounds[1].Calls[0], turns[1].Rounds[0].Calls[0]
	if len(bash.Commands) != 2 || bash.Commands[0].Tool != "workspace_read" || bash.Commands[0].Arguments != `{"path":"plan.md"}` || bash.Seq == 0 {
		t.Errorf("bash call: %+v", bash)
	}
	if len(write.Commits) != 1 || len(edit.Commits) != 1 {
		t.Fatalf("commits: write %+v, edit %+v", write.Commits, edit.Commits)
	}
	w, e := write.Commits[0], edit.Commits[0]
	if w.Version != 1 || len(w.Changes) != 1 || w.Changes[0].Path != "plan.md" || w.Changes[0].Change != "added" {
		t.Errorf("write's commit: %+v", w)
	}
	if e.Version != 2 || e.From != w.To || len(e.Changes) != 1 || e.Changes[0].Change != "changed" || e.Changes[0].Old != w.Changes[0].New {
		t.Errorf("edit's commit: %+v; want version 2 on %s", e, w.To)
	}
	if turns[0].Seq == 0 || turns[0].Rounds[0].Model.Seq == 0 {
		t.Errorf("turn and model call seqs: %d, %d", turns[0].Seq, turns[0].Rounds[0].Model.Seq)
	}
}

// TestStamps: a turn, its model calls and its tool calls carry the ingress
// stamps of the inputs that began and ended them, in order, and a model
// call what it asked for.
func TestStamps(t *testing.T) {
	for _, tu := range read(t, "../../testdata/sessions/demo") {
		if tu.StartNS == 0 || tu.EndNS < tu.StartNS {
			t.Fatalf("turn %d: start %d, end %d", tu.RequestID, tu.StartNS, tu.EndNS)
		}
		for i, r := range tu.Rounds {
			m := r.Model
			if m.StartNS < tu.StartNS || m.EndNS < m.StartNS || m.EndNS > tu.EndNS {
				t.Errorf("round %d: model call [%d, %d] outside the turn [%d, %d]", i, m.StartNS, m.EndNS, tu.StartNS, tu.EndNS)
			}
			if m.Provider != "openai-responses" || m.RequestModel != "gpt-test" || m.Status != "ok" || m.ResponseID == "" {
				t.Errorf("round %d: model call %+v", i, m)
			}
			for _, c := range r.Calls {
				if c.StartNS != m.EndNS || c.EndNS < c.StartNS || c.EndNS > tu.EndNS {
					t.Errorf("round %d: %s [%d, %d]; want it to start when the model answered (%d)", i, c.Tool, c.StartNS, c.EndNS, m.EndNS)
				}
			}
		}
	}
}

// TestForks: a Fork says how many turns came before it and which of them
// were still running (a fork made mid-turn, whose rest is the fork's).
func TestForks(t *testing.T) {
	b, err := replay.Read("../../testdata/sessions/demo")
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Storage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	examples.RegisterAll(reg)
	builtin.Register(reg)
	for _, tc := range []struct {
		at          uint64
		turns, open int
	}{
		{3, 0, 0},  // before the user's message
		{8, 1, 1},  // the first model call asked for
		{18, 1, 1}, // its tool calls asked for
		{49, 1, 0}, // the turn ended
	} {
		name := fmt.Sprintf("fork-%d", tc.at)
		if _, err := world.Fork(t.Context(), world.ForkOptions{From: b.Manifest.World, Name: name, At: tc.at, Reducers: reg, Storage: st}); err != nil {
			t.Fatal(err)
		}
		r := session.NewReader(st.CAS())
		if err := st.Journal().Read(t.Context(), name, 1, r.Record); err != nil {
			t.Fatal(err)
		}
		fs := r.Forks()
		if len(fs) != 1 || fs[0].Seq != tc.at+1 || fs[0].Turns != tc.turns || len(fs[0].Open) != tc.open {
			t.Errorf("fork at %d: %+v; want the Fork record at %d, after %d turns, %d of them open", tc.at, fs, tc.at+1, tc.turns, tc.open)
			continue
		}
		for _, o := range fs[0].Open {
			if o.Chat != "main" || o.RequestID != 1 || o.Ended() {
				t.Errorf("fork at %d: open turn %+v; want turn 1 of chat main, running", tc.at, o)
			}
		}
	}
}

func TestCostUnanswered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		rounds  []*session.Round
		cost    uint64
		unknown bool
	}{
		{"no model call yet", []*session.Round{{}}, 0, true},
		{"its only call failed", []*session.Round{{Model: &session.ModelCall{Error: "llm: HTTP 500"}}}, 0, true},
		{"answered", []*session.Round{{Model: &session.ModelCall{CostMicroUSD: 42}}}, 42, false},
		{"answered, then failed", []*session.Round{{Model: &session.ModelCall{CostMicroUSD: 42}}, {Model: &session.ModelCall{Error: "timeout"}}}, 42, false},
		{"answered at no price", []*session.Round{{Model: &session.ModelCall{CostUnknown: true}}}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cost, unknown := (&session.Turn{Rounds: tc.rounds}).Cost()
			if cost != tc.cost || unknown != tc.unknown {
				t.Errorf("Cost() = %d, %v; want %d, %v", cost, unknown, tc.cost, tc.unknown)
			}
		})
	}
}
