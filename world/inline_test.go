package world_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// countingStorage counts commits.
type countingStorage struct {
	world.Storage
	commits atomic.Int64
}

func (s *countingStorage) Commit(ctx context.Context, name string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	s.commits.Add(1)
	return s.Storage.Commit(ctx, name, expect, entries, blobs)
}

// inlineHTTP answers http.request like fakeHTTP, inside the step that
// asks for it when inline says so, and notes what it saw of the world
// there.
type inlineHTTP struct {
	fakeHTTP
	inline bool
	w      atomic.Pointer[world.World]

	mu   sync.Mutex
	seen []stepSeen
}

// stepSeen is what one inline run saw of its world.
type stepSeen struct {
	head      journal.Head // InStep's head
	height    uint64       // the machine's height
	jhead     journal.Head // StepJournal().Head
	last      journal.Record
	records   int     // records StepJournal().Read delivered from 1
	state     cas.Ref // the pinging cell's state, read through StepCAS
	stateRead error
}

func (f *inlineHTTP) RunsInline(ctx context.Context, c *effects.Call) bool { return f.inline }

func (f *inlineHTTP) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	if w := f.w.Load(); w != nil {
		var s stepSeen
		in, err := w.InStep(ctx, func(m *world.Machine, head journal.Head) {
			s.head, s.height = head, m.Height()
			who, _ := schema.FieldPath(c.Params, "url").(string)
			_, s.state, _ = m.State("test/Tally@1", strings.TrimPrefix(who, "https://pong.test/"))
		})
		if err != nil {
			return effects.Errorf("fake", "InStep: %v", err)
		}
		if in {
			s.jhead, _ = w.StepJournal().Head(ctx, w.Name())
			_ = w.StepJournal().Read(ctx, w.Name(), 1, func(r journal.Record) error {
				s.records++
				s.last = r
				return nil
			})
			_, s.stateRead = w.StepCAS().Get(ctx, s.state)
			f.mu.Lock()
			f.seen = append(f.seen, s)
			f.mu.Unlock()
		}
	}
	return f.fakeHTTP.Run(ctx, c)
}

func inlineWorld(t *testing.T, st world.Storage, h *inlineHTTP) (*world.World, *schema.Catalog, *reducer.Registry) {
	t.Helper()
	w, cat, reg := pingWorld(t, st, h)
	h.w.Store(w)
	return w, cat, reg
}

// TestInlineEffect: an effect whose adapter runs inline commits with the
// input that emitted it, in one commit: when Send returns, the receipt and
// all it derived are durable. Inside its run the effect sees the world as
// the step left it — machine, records (with the hashes they are committed
// with) and blobs — and the journal replays.
func TestInlineEffect(t *testing.T) {
	for _, bolt := range []bool{false, true} {
		t.Run(fmt.Sprintf("bolt=%v", bolt), func(t *testing.T) {
			ctx := t.Context()
			var base world.Storage = world.NewMemoryStorage()
			if bolt {
				bst, closeBolt := openBolt(t, t.TempDir())
				t.Cleanup(closeBolt)
				base = bst
			}
			st := &countingStorage{Storage: base}
			h := &inlineHTTP{inline: true}
			w, cat, reg := inlineWorld(t, st, h)
			before := st.commits.Load()
			if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`)); err != nil {
				t.Fatal(err)
			}
			if n := st.commits.Load() - before; n != 1 {
				t.Errorf("%d commits for a ping and its inline effect; want 1", n)
			}
			got := kinds(t, st, "pp")
			want := "Manifest DomainEvent State PlanStarted Intent Receipt Event PlanEnded State"
			if got != want {
				t.Fatalf("journal after Send returned: %s\nwant %s", got, want)
			}
			if len(h.seen) != 1 {
				t.Fatalf("%d inline runs saw the world; want 1", len(h.seen))
			}
			s := h.seen[0]
			if s.head.Seq != 5 || s.height != 5 || s.jhead != s.head || s.records != 5 || s.last.Kind != world.KindIntent {
				t.Errorf("inside the step: head %v, machine at %d, StepJournal head %v, %d records read ending with %s; want seq 5 (the Intent) everywhere",
					s.head, s.height, s.jhead, s.records, s.last.Kind)
			}
			if s.last.Hash != s.head.Hash {
				t.Errorf("the step's last record reads with hash %s; its head says %s", s.last.Hash.Short(), s.head.Hash.Short())
			}
			if !s.state.Valid() || s.stateRead != nil {
				t.Errorf("the step's new cell state %s read through StepCAS: %v", s.state.Short(), s.stateRead)
			}
			// The hashes the step saw are the ones committed.
			err := st.Journal().Read(ctx, "pp", 5, func(r journal.Record) error {
				if r.Seq == 5 && r.Hash != s.head.Hash {
					t.Errorf("record 5 committed with hash %s; the step saw %s", r.Hash.Short(), s.head.Hash.Short())
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if in, _ := w.InStep(ctx, func(*world.Machine, journal.Head) {}); in {
				t.Error("InStep is true outside a step")
			}
			w.Close()
			if _, err := world.Rerun(ctx, world.RerunOptions{Name: "pp", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true}); err != nil {
				t.Fatalf("replay: %v", err)
			}
		})
	}
}

// TestInlineEffectDeclined: an inline adapter that says no is dispatched
// as usual, once its intent is durable.
func TestInlineEffectDeclined(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	h := &inlineHTTP{inline: false}
	w, _, _ := inlineWorld(t, st, h)
	if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(t, st, "pp"), "Manifest DomainEvent State PlanStarted Intent Receipt Event PlanEnded State"; got != want {
		t.Fatalf("journal: %s\nwant %s", got, want)
	}
	if len(h.seen) != 0 || h.calls.Load() != 1 {
		t.Fatalf("%d runs inside a step, %d calls; want 0 and 1", len(h.seen), h.calls.Load())
	}
}

// panicky is an inline adapter whose runs panic.
type panicky struct{}

func (panicky) RunsInline(context.Context, *effects.Call) bool { return true }
func (panicky) Run(context.Context, *effects.Call) effects.Receipt {
	panic("the adapter broke")
}

// TestInlineEffectPanics: an inline adapter that panics gives an error
// receipt in the step that asked for it; the plan ends with that error and
// the world goes on.
func TestInlineEffectPanics(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	w, cat, reg := pingWorld(t, st, panicky{})
	for range 2 {
		if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`)); err != nil {
			t.Fatal(err)
		}
	}
	var ended []string
	for _, v := range planEnds(t, st, "pp") {
		ended = append(ended, schema.String(v))
	}
	if len(ended) != 2 || !strings.Contains(ended[0], "adapter panicked: the adapter broke") {
		t.Fatalf("plans ended: %v; want two, failed with the panic", ended)
	}
	w.Close()
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "pp", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true}); err != nil {
		t.Fatalf("replay: %v", err)
	}
}

// relay counts pongs and pings again until it has n.
type relay struct{ n uint64 }

func (r relay) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	var st tallyState
	if err := reducer.StateToGo(state, &st); err != nil {
		return reducer.Output{}, err
	}
	tag, v, _ := event.(*schema.Map).VariantTag()
	var out reducer.Output
	if tag == "Pong" {
		st.Pongs++
		if st.Pongs < r.n {
			who, _ := schema.FieldPath(v, "who").(string)
			out.Events = append(out.Events, reducer.Event{Schema: "test/Ping@1",
				Value: schema.Record("who", who, "url", "https://pong.test/"+who)})
		}
	}
	s, err := reducer.FromGo(st)
	out.State = s
	return out, err
}

// TestInlineEffectChain: effects that run inline and lead to more of them
// go on in the same batch up to its bound, then in the next ones.
func TestInlineEffectChain(t *testing.T) {
	ctx := t.Context()
	st := &countingStorage{Storage: world.NewMemoryStorage()}
	reg := reducer.NewRegistry()
	const n = 600
	reg.MustRegister("test/Tally@1", relay{n: n})
	cat, err := schema.Load("testdata/pingpong", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	h := &inlineHTTP{inline: true}
	w, err := world.Open(ctx, world.Options{Name: "pp", Catalog: cat, Reducers: reg, Storage: st,
		Adapters: map[string]effects.Adapter{"http.request": h}, Entropy: zeroReader{}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := st.commits.Load()
	if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.calls.Load(); got != n {
		t.Fatalf("%d effects ran; want %d", got, n)
	}
	// 600 receipts: the first batch takes the ping and 255 of them, each
	// later batch up to 256 (the last intent of a full batch is dispatched).
	if c := st.commits.Load() - before; c < 3 || c > 6 {
		t.Errorf("%d commits for a chain of %d inline effects; want a few (batches of at most 256 inputs)", c, n)
	}
	w.Close()
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "pp", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true}); err != nil {
		t.Fatalf("replay: %v", err)
	}
}

// fanout answers a Ping to x with two, to a and to b (which come back to
// it as Pings too: it ignores those).
type fanout struct{}

func (fanout) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	var out reducer.Output
	tag, v, _ := event.(*schema.Map).VariantTag()
	if who, _ := schema.FieldPath(v, "who").(string); tag == "Ping" && who == "x" {
		for _, who := range []string{"a", "b"} {
			out.Events = append(out.Events, reducer.Event{Schema: "test/Ping@1",
				Value: schema.Record("who", who, "url", "https://pong.test/"+who)})
		}
	}
	s, err := reducer.FromGo(tallyState{})
	out.State = s
	return out, err
}

// together is an inline adapter whose runs each wait for the other: they
// succeed only when two run at once.
type together struct{ arrived, both chan struct{} }

func (together) RunsInline(context.Context, *effects.Call) bool { return true }
func (g together) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	g.arrived <- struct{}{}
	select {
	case <-g.both:
	case <-time.After(5 * time.Second):
		return effects.Errorf("together", "ran alone")
	}
	var f fakeHTTP
	return f.Run(ctx, c)
}

// TestInlineEffectsRunTogether: the effects one step emits run inline
// concurrently, as dispatched ones would (the tool calls of one turn).
func TestInlineEffectsRunTogether(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	reg := reducer.NewRegistry()
	reg.MustRegister("test/Tally@1", fanout{})
	cat, err := schema.Load("testdata/pingpong", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	g := together{arrived: make(chan struct{}, 2), both: make(chan struct{})}
	go func() {
		<-g.arrived
		<-g.arrived
		close(g.both)
	}()
	w, err := world.Open(ctx, world.Options{Name: "pp", Catalog: cat, Reducers: reg, Storage: st,
		Adapters: map[string]effects.Adapter{"http.request": g}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.SendJSON(ctx, "test/Event@1", []byte(`{"Ping": {"who": "x", "url": "https://pong.test/x"}}`)); err != nil {
		t.Fatal(err)
	}
	var ended []string
	for _, v := range planEnds(t, st, "pp") {
		ended = append(ended, schema.String(v))
	}
	if len(ended) != 2 || strings.Contains(strings.Join(ended, " "), "error") {
		t.Fatalf("plans ended: %v; want two, both ok in the step of the event", ended)
	}
}
