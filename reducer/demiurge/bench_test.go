package demiurge_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/demiurge-dev/demiurge/world/worldview"
)

// BenchmarkToolRound measures one tool round of the agent: the model
// (llmtest on loopback, no delay) answers with one introspect_schemas
// call; the chat reducer checks it; tool_plan runs it through
// introspect.call; the output goes back to the model in the next request.
// Each iteration is a turn of four such rounds and the model's final
// answer (a fresh chat each, so the transcript stays the size of a real
// turn); ms/round is the turn's time over its tool rounds, every commit
// included. Target: ≤ 2 ms a round, durable.
//
// The bolt case is the store `demiurge run` opens (internal/store: bbolt,
// fsync every commit); the memory case is the same world on
// world.MemoryStorage, the engine and the model without a disk.
//
// Beside it: model-ms and tool-ms, the time inside the two adapters
// (model-ms includes the loopback server); commits and durable-B, what a
// round makes durable (records, the model's request and response bodies,
// the chat's state, the tool's output); and floor-ms, raw bbolt commits of
// the same number and bytes in the same file, made after every turn (so
// the floor samples the disk when the turns do): the disk's price of them;
// bound-ms, floor-ms plus the time inside the adapters, what a round costs
// before any work of the engine's own; engine-ms, steady-ms minus bound-ms;
// overhead-ms, steady-ms minus model-ms: the engine's overhead a round,
// durable commits and the tool included (the figure the target bounds).
func BenchmarkToolRound(b *testing.B) {
	b.Run("bolt", func(b *testing.B) {
		st, db := boltStorage(b)
		benchToolRound(b, st, db, 4)
	})
	b.Run("memory", func(b *testing.B) {
		benchToolRound(b, world.NewMemoryStorage(), nil, 4)
	})
}

// BenchmarkToolRoundLongTurn is BenchmarkToolRound on bolt with turns of
// 64 tool rounds: what a round costs, and writes, when the transcript, the
// chat's state and the model's request grow through a long turn.
func BenchmarkToolRoundLongTurn(b *testing.B) {
	st, db := boltStorage(b)
	benchToolRound(b, st, db, 64)
}

// boltStorage opens a store as `demiurge run` does (internal/store: bbolt,
// fsync every commit) in a temporary directory, closed when b ends, and
// returns the world's storage on it and its bbolt file.
func boltStorage(b *testing.B) (*world.BoltStorage, *bbolt.DB) {
	s, err := store.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	st, err := world.NewBoltStorage(s.CAS(), s.Journal())
	if err != nil {
		b.Fatal(err)
	}
	return st, s.DB()
}

// benchToolRound runs BenchmarkToolRound on st with turns of toolRounds
// rounds; db is st's bbolt file, or nil if it has none.
func benchToolRound(b *testing.B, st world.Storage, db *bbolt.DB, toolRounds int) {
	ctx := context.Background()
	reg := reducer.NewRegistry()
	demiurge.Register(reg)
	cat, err := schema.Load("../../examples/demiurge", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		b.Fatal(err)
	}
	// Each chat (one per iteration) gets a turn of toolRounds tool rounds:
	// the model calls introspect_schemas, gets its output, calls it
	// again..., then answers. The transcript and the chat's state stay the
	// size of one turn.
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		// The rounds done: the tool outputs in the request's input, counted
		// without decoding it (the fake model's time is not the engine's).
		done := bytes.Count(r.Body, []byte(`"type":"function_call_output"`))
		if done >= toolRounds {
			return llmtest.Turn{Text: "done"}
		}
		// A valid call whose arguments differ each round (the repeat guard
		// stops identical ones); the input has 1+2·done items.
		args := fmt.Sprintf(`{"names":["demiurge/ChatEvent@3"],"consistency":"at_least:%d"}`, 1+2*done)
		return llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_schemas", Arguments: args}}}
	})
	defer srv.Close()
	gen, err := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	if err != nil {
		b.Fatal(err)
	}
	var toolsRun atomic.Int64        // tool calls that ran and succeeded
	var inModel, inTool atomic.Int64 // nanoseconds spent in the adapters
	// When the model's first and last answers of the chat running came
	// back: between them lie exactly its tool rounds, each the receipt of
	// a tool call applied, the tool run, the commit, and the next model
	// call. (Before the first: the user's message and its commit; after
	// the last: the final answer's commit.)
	var answers struct {
		sync.Mutex
		first, last time.Time
	}
	la := &llm.Adapter{Generator: gen}
	view := worldview.New("bench", cat, st)
	ta := toolcall.New(introspect.Tools(view, nil)...)
	tst := &timedStorage{Storage: st}
	w, err := world.Open(ctx, world.Options{Name: "bench", Catalog: cat, Reducers: reg, Storage: tst, SnapshotEvery: -1,
		Adapters: map[string]effects.Adapter{
			"llm.generate": timedEarly{la, func(ctx context.Context, c *effects.Call) effects.Receipt {
				t := time.Now()
				r := la.Run(ctx, c)
				done := time.Now()
				// The adapter starts while its intent's commit runs (it
				// is an EarlyAdapter) and waits for it before sending:
				// its time is counted from the later of its start and the
				// commit's end, so the overlap is not counted twice.
				if end := time.Unix(0, tst.lastEnd.Load()); end.After(t) && end.Before(done) {
					t = end
				}
				inModel.Add(int64(done.Sub(t)))
				answers.Lock()
				if answers.first.IsZero() {
					answers.first = done
				}
				answers.last = done
				answers.Unlock()
				return r
			}},
			"introspect.call": timedInline{ta, func(ctx context.Context, c *effects.Call) effects.Receipt {
				t := time.Now()
				defer func() { inTool.Add(int64(time.Since(t))) }()
				r := ta.Run(ctx, c)
				if r.Status == "ok" {
					toolsRun.Add(1)
				}
				return r
			}}},
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
	send := func(v any) {
		js, _ := json.Marshal(v)
		if _, err := w.SendJSON(ctx, "demiurge/ChatEvent@3", js); err != nil {
			b.Fatal(err)
		}
	}
	settings := map[string]any{"provider": "openai-responses", "model": "bench", "max_tokens": 100,
		"tools_ref": ref.String(), "max_rounds": toolRounds + 2, "max_repeats": 3, "output_limit": 2000}
	msg, _ := st.CAS().Put(ctx, []byte(`{"role":"user","content":"go"}`))
	// A turn: the user's message, the tool rounds, the final answer.
	turn := func(chat string) (elapsed, steady time.Duration) {
		t0 := time.Now()
		answers.Lock()
		answers.first = time.Time{}
		answers.Unlock()
		send(map[string]any{"User": map[string]any{"chat_id": chat, "request_id": 1, "text": "go", "message_ref": msg.String(), "settings": settings}})
		if err := w.WaitIdle(ctx); err != nil {
			b.Fatal(err)
		}
		elapsed = time.Since(t0)
		answers.Lock()
		defer answers.Unlock()
		return elapsed, answers.last.Sub(answers.first)
	}
	// What the turns since h made durable: the records and their bytes,
	// the blobs not in before and theirs.
	type durable struct{ recs, recBytes, blobs, blobBytes int }
	madeSince := func(h journal.Head, before map[cas.Ref]bool) (d durable) {
		if err := st.Journal().Read(ctx, "bench", h.Seq+1, func(r journal.Record) error {
			d.recs, d.recBytes = d.recs+1, d.recBytes+len(r.Payload)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if err := st.CAS().Iterate(ctx, func(r cas.Ref, n int64) error {
			if !before[r] {
				d.blobs, d.blobBytes = d.blobs+1, d.blobBytes+int(n)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		return d
	}
	blobSet := func() map[cas.Ref]bool {
		m := map[cas.Ref]bool{}
		if err := st.CAS().Iterate(ctx, func(r cas.Ref, _ int64) error { m[r] = true; return nil }); err != nil {
			b.Fatal(err)
		}
		return m
	}
	// A first turn, untimed, gives the commits and bytes of one: the floor
	// repeats them in raw bbolt after every timed turn, so the disk's price
	// is sampled in the same moments as the turns (a shared disk's speed
	// drifts within a run).
	hw, txw, beforeWarm := w.Head(), txid(db), blobSet()
	turn("warm")
	perTurn := madeSince(hw, beforeWarm)
	commitsPerTurn := txid(db) - txw
	h0, tx0, before := w.Head(), txid(db), blobSet()
	toolsRun.Store(0)
	inModel.Store(0)
	inTool.Store(0)
	tst.inCommit.Store(0)
	tst.commits.Store(0)
	var elapsed, steady, floor time.Duration
	var floorSeq uint64 // the floor's keys, unique across its commits
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		e, s := turn(fmt.Sprintf("c%d", i))
		elapsed += e
		steady += s
		if db != nil {
			floor += rawCommits(b, db, &floorSeq, commitsPerTurn, perTurn.recs, perTurn.recBytes, perTurn.blobs, perTurn.blobBytes)
		}
	}
	b.StopTimer()
	h1 := w.Head()
	// Commits: bbolt's write transactions, the floor's left out, when
	// there is a file (every one of them costs its fsyncs); else the
	// world's Commit calls.
	commits := int(tst.commits.Load())
	if db != nil {
		commits = txid(db) - tx0 - b.N*commitsPerTurn
	}
	rounds := b.N * toolRounds
	if n := toolsRun.Load(); n != int64(rounds) {
		b.Fatalf("%d tool calls succeeded, want %d: the benchmark is not measuring tool rounds", n, rounds)
	}
	made := madeSince(h0, before)
	recs, recBytes, blobs, blobBytes := made.recs, made.recBytes, made.blobs, made.blobBytes
	perRound := elapsed / time.Duration(rounds)
	b.ReportMetric(float64(perRound.Microseconds())/1000, "ms/round")
	b.ReportMetric(float64(floor.Microseconds())/1000/float64(rounds), "floor-ms/round")
	b.ReportMetric(float64(recBytes+blobBytes)/float64(rounds), "durable-B/round")
	b.ReportMetric(float64(h1.Seq-h0.Seq)/float64(rounds), "records/round")
	b.ReportMetric(float64(commits)/float64(rounds), "commits/round")
	b.ReportMetric(float64(inModel.Load())/1e6/float64(rounds), "model-ms/round")
	b.ReportMetric(float64(inTool.Load())/1e6/float64(rounds), "tool-ms/round")
	b.ReportMetric(float64(tst.inCommit.Load())/1e6/float64(rounds), "commit-ms/round")
	b.ReportMetric(float64(steady.Microseconds())/1000/float64(rounds), "steady-ms/round")
	// What a round costs before any work of the engine's own: the disk's
	// price of its commits plus the time inside its two adapters.
	bound := (float64(floor.Microseconds())/1000 + float64(inModel.Load()+inTool.Load())/1e6) / float64(rounds)
	b.ReportMetric(bound, "bound-ms/round")
	b.ReportMetric(float64(steady.Microseconds())/1000/float64(rounds)-bound, "engine-ms/round")
	// The figure: the engine's overhead a round, durable commits
	// included: a steady round less the time inside the model adapter.
	b.ReportMetric((float64(steady.Microseconds())/1000-float64(inModel.Load())/1e6)/float64(rounds), "overhead-ms/round")
	if testing.Verbose() {
		fmt.Printf("rounds %d in %s (%s each); %d commits, %d records (%d B), %d blobs (%d B); the raw floor %s\n",
			rounds, elapsed, perRound, commits, recs, recBytes, blobs, blobBytes, floor)
	}
}

// timedStorage times commits.
type timedStorage struct {
	world.Storage
	inCommit atomic.Int64
	commits  atomic.Int64
	lastEnd  atomic.Int64 // when the last commit ended, in Unix nanoseconds
}

func (s *timedStorage) Commit(ctx context.Context, name string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	t := time.Now()
	defer func() {
		end := time.Now()
		s.inCommit.Add(int64(end.Sub(t)))
		s.lastEnd.Store(end.UnixNano())
	}()
	s.commits.Add(1)
	return s.Storage.Commit(ctx, name, expect, entries, blobs)
}

// timedEarly is an adapter that starts early, whose runs go through run,
// which times them.
type timedEarly struct {
	effects.EarlyAdapter
	run effects.AdapterFunc
}

func (t timedEarly) Run(ctx context.Context, c *effects.Call) effects.Receipt { return t.run(ctx, c) }

// timedInline is an inline adapter whose runs go through run, which
// times them.
type timedInline struct {
	effects.InlineAdapter
	run effects.AdapterFunc
}

func (t timedInline) Run(ctx context.Context, c *effects.Call) effects.Receipt { return t.run(ctx, c) }

// txid is the id of the database's last committed write transaction, or
// 0 if db is nil.
func txid(db *bbolt.DB) int {
	var id int
	if db != nil {
		_ = db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil })
	}
	return id
}

// rawCommits makes n bbolt commits that together write recs values of
// recBytes bytes under sequential keys and blobs values of blobBytes bytes
// under BLAKE3 keys, and returns the time they took. The keys are made
// from *seq on, which it advances: every call inserts, none overwrites.
func rawCommits(b *testing.B, db *bbolt.DB, seq *uint64, n, recs, recBytes, blobs, blobBytes int) time.Duration {
	b.Helper()
	if n == 0 {
		return 0
	}
	start := time.Now()
	for i := range n {
		// Commit i writes its share of each, spread evenly.
		nr := recs*(i+1)/n - recs*i/n
		nb := blobs*(i+1)/n - blobs*i/n
		err := db.Update(func(tx *bbolt.Tx) error {
			rb, err := tx.CreateBucketIfNotExists([]byte("floor-records"))
			if err != nil {
				return err
			}
			bb, err := tx.CreateBucketIfNotExists([]byte("floor-blobs"))
			if err != nil {
				return err
			}
			for range nr {
				*seq++
				var k [8]byte
				binary.BigEndian.PutUint64(k[:], *seq)
				if err := rb.Put(k[:], make([]byte, recBytes/recs)); err != nil {
					return err
				}
			}
			for range nb {
				*seq++
				var k [8]byte
				binary.BigEndian.PutUint64(k[:], *seq)
				key := cas.Sum(k[:]).Digest()
				if err := bb.Put(key[:], make([]byte, blobBytes/blobs)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}
