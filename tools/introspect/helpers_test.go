package introspect_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/demiurge-dev/demiurge/world/worldview"
)

type zeroEntropy struct{}

func (zeroEntropy) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// stepClock starts at 2023-11-14T22:13:20Z and moves 1 ms per reading.
func stepClock() func() time.Time {
	n := int64(1_700_000_000_000_000_000)
	return func() time.Time {
		n += int64(time.Millisecond)
		return time.Unix(0, n)
	}
}

// counterWorld opens the counter example on memory storage and sends it
// Start{3} and three Ticks. It returns the world, its view and the head
// after each input (heads[0] after the manifest).
func counterWorld(t testing.TB) (*world.World, *worldview.View, []journal.Head) {
	t.Helper()
	cat, err := schema.Load("../../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	counter.Register(reg)
	w, err := world.Open(t.Context(), world.Options{Name: "c1", Catalog: cat, Reducers: reg,
		Storage: world.NewMemoryStorage(), Now: stepClock(), Entropy: zeroEntropy{}, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	heads := []journal.Head{w.Head()}
	for _, js := range []string{`{"Start": {"target": 3}}`, `"Tick"`, `"Tick"`, `"Tick"`} {
		h, err := w.SendJSON(t.Context(), "counter/Event@1", []byte(js))
		if err != nil {
			t.Fatal(err)
		}
		heads = append(heads, h)
	}
	return w, worldview.Of(w), heads
}

// Reducers of the probe world (testdata/probe).
var (
	sumReducer = reducer.Func(func(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
		total, notes := uint64(0), []schema.Value{}
		if state != nil {
			t, _ := state.(*schema.Map).Get("total")
			total = t.(uint64)
			n, _ := state.(*schema.Map).Get("notes")
			notes = append(notes, n.([]schema.Value)...)
		}
		_, add, _ := event.(*schema.Map).VariantTag()
		if note, _ := add.(*schema.Map).Get("note"); note == "delete" {
			return reducer.Output{}, nil // deletes the cell
		}
		n, _ := add.(*schema.Map).Get("n")
		total += n.(uint64)
		if note, _ := add.(*schema.Map).Get("note"); note != nil {
			notes = append(notes, note)
		}
		return reducer.Output{State: schema.Record("total", total, "notes", notes)}, nil
	})
	countReducer = reducer.Func(func(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
		pings := uint64(0)
		if state != nil {
			p, _ := state.(*schema.Map).Get("pings")
			pings = p.(uint64)
		}
		return reducer.Output{State: schema.Record("pings", pings+1)}, nil
	})
)

// probe is the probe world (testdata/probe) and what it was opened with.
type probe struct {
	w   *world.World
	v   *worldview.View
	st  world.Storage
	cat *schema.Catalog
	reg *reducer.Registry
}

// newProbe opens the probe world on memory storage with the introspect
// adapters and tools; the world is not driven yet.
func newProbe(t testing.TB) *probe {
	t.Helper()
	return newProbeWith(t, func(st world.Storage) world.Storage { return st })
}

// newProbeWith is newProbe whose world runs on wrap(storage), while the
// view is made with the storage itself.
func newProbeWith(t testing.TB, wrap func(world.Storage) world.Storage) *probe {
	t.Helper()
	p := &probe{reg: reducer.NewRegistry(), st: world.NewMemoryStorage()}
	p.reg.MustRegister("probe/Sum@1", sumReducer)
	p.reg.MustRegister("probe/Count@1", countReducer)
	var err error
	p.cat, err = schema.Load("testdata/probe", &schema.LoadOptions{Reducers: p.reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.cat.Warnings) > 0 {
		t.Errorf("warnings:\n%v", p.cat.Warnings)
	}
	p.v = worldview.New("probe", p.cat, p.st)
	adapters := introspect.Adapters(p.v, nil)
	adapters["introspect.call"] = toolcall.New(introspect.Tools(p.v, nil)...)
	p.w, err = world.Open(t.Context(), world.Options{Name: "probe", Catalog: p.cat, Reducers: p.reg, Storage: wrap(p.st),
		Adapters: adapters, Now: stepClock(), Entropy: zeroEntropy{}, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.v.Attach(p.w)
	t.Cleanup(func() { p.w.Close() })
	return p
}

// probeWorld is newProbe's world and view.
func probeWorld(t testing.TB) (*world.World, *worldview.View) {
	p := newProbe(t)
	return p.w, p.v
}

func send(t testing.TB, w *world.World, schemaName, js string) journal.Head {
	t.Helper()
	h, err := w.SendJSON(t.Context(), schemaName, []byte(js))
	if err != nil {
		t.Fatalf("send %s %s: %v", schemaName, js, err)
	}
	return h
}

// toolNamed returns one of the introspect tools.
func toolNamed(t testing.TB, v introspect.View, name string) tools.Tool {
	t.Helper()
	for _, tl := range introspect.Tools(v, nil) {
		if tl.Info().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// decode parses a tool's stdout.
func decode(t testing.TB, stdout string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
	}
	return m
}

// jsonOf re-encodes a part of an answer compactly, for comparisons.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func call(ctx context.Context, a effects.Adapter, kind string, params schema.Value) effects.Receipt {
	return a.Run(ctx, &effects.Call{Intent: &effects.Intent{Kind: kind}, Params: params})
}

// canon re-encodes JSON with object members sorted, as jsonOf does.
func canon(t testing.TB, js string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("bad JSON in a test: %v: %s", err, js)
	}
	return jsonOf(t, v)
}

// pathOf splits a dotted path; numbers index arrays.
func pathOf(path string) []any {
	var p []any
	for _, s := range strings.Split(path, ".") {
		if n, err := strconv.Atoi(s); err == nil {
			p = append(p, n)
		} else {
			p = append(p, s)
		}
	}
	return p
}

// get walks an answer: object members by name, array elements by index.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// outputSchema compiles a tool's output schema.
func outputSchema(t testing.TB, tl tools.Tool) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(tl.Info().OutputSchema)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///out.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///out.json")
	if err != nil {
		t.Fatalf("%s: output schema: %v", tl.Info().Name, err)
	}
	return s
}

// checkOutput checks a successful response: exit 0, no error, stdout a
// JSON object that fits the tool's output schema.
func checkOutput(t testing.TB, tl tools.Tool, r tools.Response) map[string]any {
	t.Helper()
	if r.ExitCode != 0 || r.Error != "" || r.Stderr != "" {
		t.Fatalf("%s failed: exit %d, error %q, stderr %q", tl.Info().Name, r.ExitCode, r.Error, r.Stderr)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(r.Stdout))
	if err != nil {
		t.Fatalf("%s: stdout is not JSON: %v\n%s", tl.Info().Name, err, r.Stdout)
	}
	if err := outputSchema(t, tl).Validate(doc); err != nil {
		t.Errorf("%s: stdout does not fit the output schema: %v\n%s", tl.Info().Name, err, r.Stdout)
	}
	return decode(t, r.Stdout)
}

// run executes a tool with JSON arguments.
func run(t testing.TB, v introspect.View, name, args string) (tools.Tool, tools.Response) {
	t.Helper()
	tl := toolNamed(t, v, name)
	ctx := context.Background()
	if tt, ok := t.(*testing.T); ok {
		ctx = tt.Context()
	}
	return tl, tl.Run(ctx, tools.Request{Arguments: json.RawMessage(args)}, nil)
}
