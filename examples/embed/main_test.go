package main

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/replay/replaytest"
)

var (
	record = flag.Bool("record", false, "record testdata/session again against llmtest (review the diff)")
	update = flag.Bool("update", false, "re-derive the session if it diverges, and rewrite its trace.txt (review the diff)")
)

const session = "testdata/session"

// turns are the fake model's answers the session was recorded with: it
// calls get_weather by itself, then as a command of a bash script, then
// answers.
var turns = []llmtest.Turn{
	{Calls: []llmtest.Call{{Name: "get_weather", Arguments: `{"city": "Paris"}`}}},
	{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "get_weather --city Oslo"}`}}},
	{Text: "Paris: sunny, 21°C. Oslo: sunny, 21°C."},
}

// TestEmbed runs the program against the recorded session: the model's
// answers are the recording's, get_weather runs for real.
func TestEmbed(t *testing.T) {
	if *record {
		recordSession(t)
	}
	var out bytes.Buffer
	if err := run(t.Context(), &out, "../demiurge", agent.Cassette(session)); err != nil {
		t.Fatal(err)
	}
	want := `user: What's the weather in Paris and in Oslo?
→ get_weather {"city":"Paris"}
→ bash {"commands":"get_weather --city Oslo"}
assistant: Paris: sunny, 21°C. Oslo: sunny, 21°C.
`
	if out.String() != want {
		t.Errorf("the program printed\n%s\nwant\n%s", out.String(), want)
	}
}

// TestSessionReplays is the golden replay test of the recorded session:
// it replays byte for byte with the code as it is.
func TestSessionReplays(t *testing.T) {
	replaytest.CheckGolden(t, session, agent.Registry(), *update || *record)
}

// recordSession runs the program against llmtest answering turns, in a
// store, and exports the world as the session bundle (World.Export).
func recordSession(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: turns})
	defer srv.Close()
	dir := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL}
	opts := []agent.Option{agent.WithDir(dir), agent.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })}
	m := agent.Model{Name: "gpt-test"}
	if err := run(t.Context(), &bytes.Buffer{}, "../demiurge", m, opts...); err != nil {
		t.Fatal(err)
	}
	if n := srv.Remaining(); n != 0 {
		t.Fatalf("the session used %d turns fewer than its script", n)
	}
	w, err := agent.Open(t.Context(), "../demiurge", append(opts, agent.WithModel(m), agent.WithTools(getWeather))...)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.RemoveAll(session); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Export(t.Context(), session); err != nil {
		t.Fatal(err)
	}
}
