package demiurge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/demiurge-dev/demiurge/world/worldview"
)

// BenchmarkLongTurn measures what a tool round costs late in a long turn
// against early in it: one turn of N tool rounds (the model calls
// introspect_schemas, whose output is about 1 KB, then answers), on the
// store `demiurge run` opens (bbolt, fsync every commit). For the rounds
// around round 10 and for the last 10 rounds it reports the bytes made
// durable a round (the records and the blobs the store did not hold) and
// the time a round takes, whole and less the time inside the model
// adapter (building and sending the request, reading the answer, which
// grows with the transcript sent: the model's cost, not the engine's);
// late-B/early-B and late-ms/early-ms are the ratios the issue bounds
// (≤ 1.2), MB/turn what the whole turn wrote.
//
// window sets the model's context window (0: none): with one, the chat
// compacts, and every request stays under it.
func BenchmarkLongTurn(b *testing.B) {
	for _, n := range []int{64, 256, 1000} {
		b.Run(fmt.Sprintf("rounds=%d", n), func(b *testing.B) {
			st, _ := boltStorage(b)
			benchLongTurn(b, st, n, 0)
		})
	}
	b.Run("rounds=1000/window=8000", func(b *testing.B) {
		st, _ := boltStorage(b)
		benchLongTurn(b, st, 1000, 8000)
	})
}

// BenchmarkLongChat is BenchmarkLongTurn over a chat of 200 turns of 5
// rounds each: the rounds of turn 10 (early) against those of turn 200
// (late).
func BenchmarkLongChat(b *testing.B) {
	st, _ := boltStorage(b)
	benchLongChat(b, st, 200, 5)
}

// countingStorage counts what its commits make durable: the records'
// payloads and the blobs the store did not hold.
type countingStorage struct {
	world.Storage
	mu    sync.Mutex
	bytes int64
}

func (s *countingStorage) Commit(ctx context.Context, name string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	n := int64(0)
	for _, e := range entries {
		n += int64(len(e.Payload))
	}
	seen := map[cas.Ref]bool{}
	for _, blob := range blobs {
		r := cas.Sum(blob)
		if ok, _ := s.CAS().Has(ctx, r); !ok && !seen[r] {
			n += int64(len(blob))
		}
		seen[r] = true
	}
	h, err := s.Storage.Commit(ctx, name, expect, entries, blobs)
	if err == nil {
		s.mu.Lock()
		s.bytes += n
		s.mu.Unlock()
	}
	return h, err
}

func (s *countingStorage) written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// roundMark is what was true when the model received a round's request.
type roundMark struct {
	at      time.Time
	written int64
	inModel time.Duration // time inside the model adapter so far
}

func benchLongTurn(b *testing.B, st world.Storage, rounds int, window uint64) {
	benchRounds(b, st, 1, rounds, window)
}

func benchLongChat(b *testing.B, st world.Storage, turns, rounds int) {
	benchRounds(b, st, turns, rounds, 0)
}

// benchRounds runs each iteration as a chat of turns turns of rounds
// tool rounds each; with one turn, early is rounds 5 to 15 and late the
// last 10; with more, early is turn 10's rounds and late the last turn's.
func benchRounds(b *testing.B, st world.Storage, turns, rounds int, window uint64) {
	ctx := context.Background()
	reg := reducer.NewRegistry()
	demiurge.Register(reg)
	cat, err := schema.Load("../../examples/demiurge", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		b.Fatal(err)
	}
	cst := &countingStorage{Storage: st}
	var mu sync.Mutex
	var marks []roundMark
	var inModel time.Duration
	done, largest := 0, 0
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		mu.Lock()
		largest = max(largest, len(r.Body))
		mu.Unlock()
		if bytes.Contains(r.Body, []byte("summarizing the earlier part of a conversation")) {
			return llmtest.Turn{Text: "SUMMARY: the schemas were read many times; nothing else happened."}
		}
		mu.Lock()
		marks = append(marks, roundMark{at: time.Now(), written: cst.written(), inModel: inModel})
		mu.Unlock()
		if done >= rounds {
			done = 0
			return llmtest.Turn{Text: "done"}
		}
		done++
		args := fmt.Sprintf(`{"names":["demiurge/ChatEvent@3"],"consistency":"at_least:%d"}`, done)
		return llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_schemas", Arguments: args}}}
	})
	defer srv.Close()
	gen, err := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	if err != nil {
		b.Fatal(err)
	}
	la := &llm.Adapter{Generator: gen}
	view := worldview.New("bench", cat, st)
	ta := toolcall.New(introspect.Tools(view, nil)...)
	w, err := world.Open(ctx, world.Options{Name: "bench", Catalog: cat, Reducers: reg, Storage: cst, SnapshotEvery: -1,
		Adapters: map[string]effects.Adapter{
			"llm.generate": effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
				t := time.Now()
				r := la.Run(ctx, c)
				mu.Lock()
				inModel += time.Since(t)
				mu.Unlock()
				return r
			}),
			"introspect.call": ta},
		Dispatch: effects.DispatcherOptions{Getenv: func(string) (string, bool) { return "sk-bench", true }}})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	view.Attach(w)
	var specs []tools.SpecTool
	for _, name := range ta.Names() {
		t, _ := ta.Tool(name)
		specs = append(specs, tools.SpecFor(t, tools.FamilyIntrospect))
	}
	blob, _ := tools.EncodeSpec(specs)
	ref, _ := st.CAS().Put(ctx, blob)
	msg, _ := st.CAS().Put(ctx, []byte(`{"role":"user","content":"go"}`))
	settings := map[string]any{"provider": "openai-responses", "model": "bench", "max_tokens": 100,
		"tools_ref": ref.String(), "max_rounds": rounds + 2, "max_repeats": 3, "output_limit": 2000}
	if window > 0 {
		settings["context_window"] = window
	}
	var early, late struct {
		bytes        int64
		time, engine time.Duration
	}
	var total int64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		mu.Lock()
		marks, done = nil, 0
		mu.Unlock()
		w0 := cst.written()
		for turn := 1; turn <= turns; turn++ {
			js, _ := json.Marshal(map[string]any{"User": map[string]any{"chat_id": fmt.Sprintf("c%d", i), "request_id": turn, "text": "go",
				"message_ref": msg.String(), "settings": settings}})
			if _, err := w.SendJSON(ctx, "demiurge/ChatEvent@3", js); err != nil {
				b.Fatal(err)
			}
			if err := w.WaitIdle(ctx); err != nil {
				b.Fatal(err)
			}
		}
		total += cst.written() - w0
		mu.Lock()
		if len(marks) != turns*(rounds+1) {
			b.Fatalf("%d model calls; want %d", len(marks), turns*(rounds+1))
		}
		// Round k runs from the model's k-th request to its k+1-th.
		span := func(from, to int) (int64, time.Duration, time.Duration) {
			d := marks[to].at.Sub(marks[from].at)
			return marks[to].written - marks[from].written, d, d - (marks[to].inModel - marks[from].inModel)
		}
		var eb, lb int64
		var et, ee, lt, le time.Duration
		if turns == 1 {
			eb, et, ee = span(5, 15)
			lb, lt, le = span(rounds-10, rounds)
		} else {
			// A turn's rounds: from its first request to its last.
			first := func(turn int) int { return (turn - 1) * (rounds + 1) }
			eb, et, ee = span(first(10), first(10)+rounds)
			lb, lt, le = span(first(turns), first(turns)+rounds)
			eb, lb = eb*10/int64(rounds), lb*10/int64(rounds) // as over 10 rounds
			et, ee, lt, le = et*10/time.Duration(rounds), ee*10/time.Duration(rounds), lt*10/time.Duration(rounds), le*10/time.Duration(rounds)
		}
		mu.Unlock()
		early.bytes, early.time, early.engine = early.bytes+eb, early.time+et, early.engine+ee
		late.bytes, late.time, late.engine = late.bytes+lb, late.time+lt, late.engine+le
	}
	b.StopTimer()
	// With a window, every request stayed under it (at a token for every
	// 4 bytes, which overcounts JSON). The whole session replays, at a
	// time a record that does not grow with it.
	if window > 0 {
		if largest/4 > int(window) {
			b.Fatalf("a request of %d bytes, about %d tokens, over the window of %d", largest, largest/4, window)
		}
		b.ReportMetric(float64(largest)/4, "largest-request-tokens")
	}
	{
		w.Close()
		t0 := time.Now()
		res, err := world.Rerun(ctx, world.RerunOptions{Name: "bench", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true})
		if err != nil {
			b.Fatalf("the session does not replay: %v", err)
		}
		b.ReportMetric(float64(time.Since(t0).Microseconds())/float64(res.Records), "replay-µs/record")
	}
	per := float64(10 * b.N)
	b.ReportMetric(float64(early.bytes)/per, "early-B/round")
	b.ReportMetric(float64(late.bytes)/per, "late-B/round")
	b.ReportMetric(float64(late.bytes)/float64(early.bytes), "late-B/early-B")
	b.ReportMetric(float64(early.engine.Microseconds())/1000/per, "early-ms/round")
	b.ReportMetric(float64(late.engine.Microseconds())/1000/per, "late-ms/round")
	b.ReportMetric(float64(late.engine)/float64(early.engine), "late-ms/early-ms")
	b.ReportMetric(float64(late.time.Microseconds())/1000/per, "late-whole-ms/round")
	b.ReportMetric(float64(total)/1e6/float64(b.N*turns), "MB/turn")
}
