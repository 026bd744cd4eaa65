package cli

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
)

// zeros is entropy that is all zeros.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestCLIAndEmbedSameJournal: `demiurge run -m` and a program that embeds
// the agent (package agent) write the same journal for the same session,
// record for record and byte for byte, given the same clock and entropy:
// the command line is a shell over the door, nothing more.
func TestCLIAndEmbedSameJournal(t *testing.T) {
	const msg = "What is the journal head of this world?"
	manifest := filepath.Join("..", "examples", "demiurge")
	cassette := filepath.Join("..", "testdata", "sessions", "single-tool")
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return at }

	cli := t.TempDir()
	var out, errs bytes.Buffer
	a := &app{stdio: stdio{in: strings.NewReader(""), out: &out, err: &errs}, log: slog.New(slog.DiscardHandler), clock: clock, entropy: zeros{}}
	if code := executeApp(t.Context(), a, []string{"--store", cli, "run", manifest, "--llm", "cassette:" + cassette, "-m", msg}, func(string) string { return "" }); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out.String(), errs.String())
	}

	embedded := t.TempDir()
	w, err := agent.Open(t.Context(), manifest, agent.WithDir(embedded), agent.WithModel(agent.Cassette(cassette)),
		agent.WithReducers(examples.RegisterAll), agent.WithClock(clock, zeros{}), agent.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range w.Chat("main").Send(t.Context(), msg) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	a1, a2 := records(t, cli), records(t, embedded)
	if len(a1) < 10 {
		t.Fatalf("the CLI's journal has %d records", len(a1))
	}
	for i := range max(len(a1), len(a2)) {
		if i >= len(a1) || i >= len(a2) {
			t.Fatalf("the journals differ in length: %d records by the CLI, %d embedded", len(a1), len(a2))
		}
		if a1[i].Kind != a2[i].Kind || !bytes.Equal(a1[i].Payload, a2[i].Payload) || a1[i].Hash != a2[i].Hash {
			t.Fatalf("record %d differs: the CLI wrote %s %q, the program %s %q", i+1, a1[i].Kind, a1[i].Payload, a2[i].Kind, a2[i].Payload)
		}
	}
}

// records reads world main of the store in dir.
func records(t *testing.T, dir string) []journal.Record {
	t.Helper()
	s, err := store.Open(dir, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []journal.Record
	if err := s.Journal().Read(context.Background(), "main", 1, func(r journal.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
