package world_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/fixtures/*.txtar")

// TestFixtures runs testdata/fixtures/*.txtar: a world (the AIR files of
// the archive, or the example named by its "example" file, e.g. counter
// for examples/counter), a "script" of commands, and the "want" output.
// The world runs on a world.Machine over memory storage, stepped by the
// script: every input is stamped with a clock that moves one second an
// input and zero entropy, applied, and its records committed, so the
// output is the same on every run. Effects run nowhere: they wait in
// "effects" until the script answers them. Commands:
//
//	event SCHEMA VALUE_JSON   ingest a domain event; one that World.SendJSON would refuse is output as "refused: ..."
//	effects                   list the intents waiting for receipts (e1, e2, ... in emission order)
//	receipt H PAYLOAD_JSON    answer intent H with an ok receipt
//	fail H MESSAGE            answer intent H with an error receipt
//	timeout H MESSAGE         answer intent H with a timeout receipt
//	state                     print every reducer cell
//	plans                     print the running plan instances and their steps
//	journal                   print the whole journal
//	snapshot                  journal a snapshot of the machine
//	replay                    replay the journal from genesis (and from its newest snapshot) and compare
//	reopen                    throw the machine away and recover it from the journal
//
// H is a handle the output gave an intent (e1), or #NAME for an intent
// no one emitted (its hash is that of NAME). After each input the
// records it journaled are printed, one a line, without their stamps;
// hashes are cut short, the manifest's is @manifest and intents' are
// their handles.
func TestFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/fixtures/*.txtar")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := runWorldFixture(t, ar)
			if diff := checkGolden(ar, got); diff != "" {
				if *update {
					setWant(ar, got)
					if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				t.Errorf("output differs (rerun with -update and review the diff)\n%s", diff)
			}
		})
	}
}

// checkGolden compares got with the archive's want section and returns a
// description of the first difference, or "" if they agree.
func checkGolden(ar *txtar.Archive, got string) string {
	want := ""
	for _, f := range ar.Files {
		if f.Name == "want" {
			want = string(f.Data)
		}
	}
	if want == got {
		return ""
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		g, w := "<end>", "<end>"
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Sprintf("first difference at line %d:\ngot:  %s\nwant: %s\n\ngot:\n%s", i+1, g, w, got)
		}
	}
	return "outputs differ"
}

func setWant(ar *txtar.Archive, got string) {
	for i, f := range ar.Files {
		if f.Name == "want" {
			ar.Files[i].Data = []byte(got)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: "want", Data: []byte(got)})
}

// TestFixtureDetectsMismatch: a fixture whose want section is wrong fails,
// naming the line.
func TestFixtureDetectsMismatch(t *testing.T) {
	ar := txtar.Parse([]byte(`-- example --
counter
-- script --
event counter/Event@1 {"Start": {"target": 2}}
state
-- want --
> event counter/Event@1 {"Start": {"target": 2}}
  2 DomainEvent {"value":{"$tag":"Start","$value":{"target":2}},"schema":"counter/Event@1"}
  3 State {"state":"blake3:000000000000","reducer":"counter/Counter@1"}
> state
  counter/Counter@1 {"pc":{"$tag":"Counting"},"remaining":3}
`))
	got := runWorldFixture(t, ar)
	diff := checkGolden(ar, got)
	if diff == "" {
		t.Fatal("a wrong want section passed")
	}
	if !strings.Contains(diff, "first difference at line 3") {
		t.Errorf("diff does not name line 3:\n%s", diff)
	}
	// With the right output, it passes.
	setWant(ar, got)
	if diff := checkGolden(ar, runWorldFixture(t, ar)); diff != "" {
		t.Errorf("the same script twice: %s", diff)
	}
}

const fixtureWorld = "fx"

type worldFixture struct {
	t    *testing.T
	ctx  context.Context
	out  *bytes.Buffer
	cat  *schema.Catalog
	reg  *reducer.Registry
	st   *world.MemoryStorage
	m    *world.Machine
	head journal.Head
	n    uint64 // inputs stamped

	handles  map[cas.Ref]string // intent → e1, #name
	byHandle map[string]cas.Ref
	nIntents int
}

func runWorldFixture(t *testing.T, ar *txtar.Archive) string {
	t.Helper()
	var srcs []schema.Source
	var script, example string
	for _, f := range ar.Files {
		switch f.Name {
		case "script":
			script = string(f.Data)
		case "want":
		case "example":
			example = strings.TrimSpace(string(f.Data))
		default:
			srcs = append(srcs, schema.Source{Name: f.Name, Data: f.Data})
		}
	}
	reg := reducer.NewRegistry()
	examples.RegisterAll(reg)
	opts := &schema.LoadOptions{Reducers: reg.Names()}
	var cat *schema.Catalog
	var err error
	if example != "" {
		cat, err = schema.Load(filepath.Join("..", "examples", example), opts)
	} else {
		cat, err = schema.LoadSources(srcs, opts)
	}
	if err != nil {
		t.Fatalf("load:\n%v", err)
	}
	fx := &worldFixture{
		t: t, ctx: t.Context(), out: &bytes.Buffer{}, cat: cat, reg: reg, st: world.NewMemoryStorage(),
		handles: map[cas.Ref]string{}, byHandle: map[string]cas.Ref{},
	}
	fx.m = world.NewMachine(cat, reg, fx.st.CAS())
	var nodes [][]byte
	_ = cat.Nodes(func(_ cas.Ref, node []byte) error {
		nodes = append(nodes, node)
		return nil
	})
	if !fx.apply(&world.Input{Kind: world.KindManifest, Manifest: cat.ManifestRef()}, nodes, false) {
		t.Fatal("the manifest does not apply")
	}
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fmt.Fprintf(fx.out, "> %s\n", line)
		fx.command(line)
	}
	return fx.out.String()
}

func (fx *worldFixture) printf(format string, args ...any) {
	fmt.Fprintf(fx.out, "  "+format+"\n", args...)
}

func (fx *worldFixture) command(line string) {
	t := fx.t
	cmd, rest, _ := strings.Cut(line, " ")
	arg1, arg2, _ := strings.Cut(rest, " ")
	switch cmd {
	case "event":
		v, err := fx.ingress(arg1, []byte(arg2))
		if err != nil {
			fx.printf("refused: %v", err)
			return
		}
		fx.apply(&world.Input{Kind: world.KindEvent, Schema: arg1, Value: v}, nil, true)
	case "effects":
		pending := fx.m.Pending()
		if len(pending) == 0 {
			fx.printf("none")
		}
		for _, in := range pending {
			fx.printf("%s %s from %s params %s", fx.handle(in.Hash), in.Kind, origin(in.Origin), fx.clean(schema.ValueJSON(in.Params)))
		}
	case "receipt", "fail", "timeout":
		ref := fx.intent(arg1)
		in := &world.Input{Kind: world.KindReceipt, Intent: ref, AdapterID: "fixture"}
		switch cmd {
		case "receipt":
			in.Status = effects.StatusOK
			in.Payload = fx.receiptPayload(ref, arg2)
		case "fail":
			in.Status, in.Error = effects.StatusError, arg2
		case "timeout":
			in.Status, in.Error = effects.StatusTimeout, arg2
		}
		fx.apply(in, nil, true)
	case "state":
		fx.printState()
	case "plans":
		running := fx.m.RunningPlans()
		if len(running) == 0 {
			fx.printf("none")
		}
		for _, in := range running {
			fx.printf("plan %d %s: %s", in.ID, in.Plan, in.Steps)
		}
	case "journal":
		err := fx.st.Journal().Read(fx.ctx, fixtureWorld, 1, func(r journal.Record) error {
			fx.printRecord(r.Seq, r.Kind, r.Payload)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	case "snapshot":
		e, b, err := fx.m.Snapshot()
		if err != nil {
			fx.printf("error: %v", err)
			return
		}
		fx.commit([]journal.Entry{e}, [][]byte{b})
	case "replay":
		fx.replay()
	case "reopen":
		fx.recover()
		fx.printf("recovered at seq %d: %d cells, %d plans running, %d intents pending",
			fx.head.Seq, fx.cells(), len(fx.m.RunningPlans()), len(fx.m.Pending()))
	default:
		t.Fatalf("unknown command %q", cmd)
	}
}

// ingress checks an event as World.SendJSON does before it journals
// anything: its schema is in the manifest and the value fits it.
func (fx *worldFixture) ingress(name string, js []byte) (schema.Value, error) {
	cat := fx.m.Catalog()
	if _, ok := cat.SchemaType(name); !ok {
		return nil, fmt.Errorf("%w: schema %s is not in the manifest", world.ErrInvalidInput, name)
	}
	v, err := schema.NormalizeJSON(cat, schema.RefType(name), js)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", world.ErrInvalidInput, name, err)
	}
	return v, nil
}

// apply stamps in (unless it is the manifest), applies it and commits what
// it derives. An input the machine refuses is printed as an error; the
// machine, which may have moved on, is rebuilt from the journal, as a
// world does.
func (fx *worldFixture) apply(in *world.Input, blobs [][]byte, show bool) bool {
	if in.Kind != world.KindManifest {
		fx.n++
		now := uint64(1_700_000_000+fx.n) * 1_000_000_000
		in.Stamp = reducer.Stamp{NowNS: now, LogicalNowNS: max(now, fx.m.LogicalNow()), JournalHeight: fx.m.Height(),
			Entropy: make([]byte, world.EntropySize), ManifestHash: fx.m.Manifest()}
	}
	step, err := fx.m.Apply(fx.ctx, in)
	if err != nil {
		fx.printf("error: %v", err)
		fx.recover()
		fx.printf("nothing journaled (head %d)", fx.head.Seq)
		return false
	}
	return fx.commit(step.Records, append(blobs, step.Blobs...), show)
}

func (fx *worldFixture) commit(entries []journal.Entry, blobs [][]byte, show ...bool) bool {
	first := fx.head.Seq + 1
	head, err := fx.st.Commit(fx.ctx, fixtureWorld, fx.head, entries, blobs)
	if err != nil {
		fx.t.Fatalf("commit: %v", err)
	}
	if head.Seq != fx.m.Height() {
		fx.t.Fatalf("journal head %d after commit, machine at %d", head.Seq, fx.m.Height())
	}
	fx.head = head
	for i, e := range entries {
		if e.Kind == world.KindIntent {
			fx.nameIntent(e.Payload)
		}
		if len(show) == 0 || show[0] {
			fx.printRecord(first+uint64(i), e.Kind, e.Payload)
		}
	}
	return true
}

func (fx *worldFixture) recover() {
	m, head, err := world.Recover(fx.ctx, fixtureWorld, fx.cat, fx.reg, fx.st)
	if err != nil {
		fx.t.Fatalf("recover: %v", err)
	}
	fx.m, fx.head = m, head
}

// nameIntent gives the intent of an Intent record its handle.
func (fx *worldFixture) nameIntent(payload []byte) {
	v, err := schema.Decode(payload)
	if err != nil {
		fx.t.Fatal(err)
	}
	s, _ := schema.FieldPath(v, "intent").(string)
	ref, err := cas.ParseRef(s)
	if err != nil {
		fx.t.Fatal(err)
	}
	fx.handle(ref)
}

func (fx *worldFixture) handle(ref cas.Ref) string {
	if h, ok := fx.handles[ref]; ok {
		return h
	}
	fx.nIntents++
	h := fmt.Sprintf("e%d", fx.nIntents)
	fx.handles[ref], fx.byHandle[h] = h, ref
	return h
}

// intent returns the intent a handle names.
func (fx *worldFixture) intent(h string) cas.Ref {
	if name, ok := strings.CutPrefix(h, "#"); ok {
		ref := cas.Sum([]byte(name))
		fx.handles[ref], fx.byHandle[h] = h, ref
		return ref
	}
	ref, ok := fx.byHandle[h]
	if !ok {
		fx.t.Fatalf("no intent has the handle %q; output so far:\n%s", h, fx.out)
	}
	return ref
}

// receiptPayload reads a receipt's payload: normalized against the
// receipt schema of the intent's effect when it fits (what an adapter
// hands back), else as it is (so that a script can send one that does not
// fit).
func (fx *worldFixture) receiptPayload(intent cas.Ref, js string) schema.Value {
	for _, in := range fx.m.Pending() {
		if in.Hash != intent {
			continue
		}
		if ef, ok := fx.m.Catalog().Effect(in.Effect); ok {
			if v, err := schema.NormalizeJSON(fx.m.Catalog(), schema.RefType(ef.ReceiptSchema), []byte(js)); err == nil {
				return v
			}
		}
	}
	v, err := jsonValue([]byte(js))
	if err != nil {
		fx.t.Fatalf("receipt payload %s: %v", js, err)
	}
	return v
}

func (fx *worldFixture) modules() []string {
	var mods []string
	for _, nr := range fx.m.Catalog().Manifest.Modules {
		mods = append(mods, nr.Name)
	}
	sort.Strings(mods)
	return mods
}

func (fx *worldFixture) cells() int {
	n := 0
	for _, mod := range fx.modules() {
		n += len(fx.m.Cells(mod))
	}
	return n
}

func (fx *worldFixture) printState() {
	n := 0
	for _, mod := range fx.modules() {
		for _, c := range fx.m.Cells(mod) {
			n++
			if c.Key == nil {
				fx.printf("%s %s", mod, fx.clean(schema.ValueJSON(c.State)))
			} else {
				fx.printf("%s[%s] %s", mod, fx.clean(schema.ValueJSON(c.Key)), fx.clean(schema.ValueJSON(c.State)))
			}
		}
	}
	if n == 0 {
		fx.printf("no cells")
	}
}

// machineView is what replay must reproduce of a machine: its cells, its
// pending intents and its running plans.
func machineView(m *world.Machine, mods []string) string {
	var b strings.Builder
	for _, mod := range mods {
		for _, c := range m.Cells(mod) {
			fmt.Fprintf(&b, "%s %s %s\n", mod, schema.ValueJSON(c.Key), c.Ref)
		}
	}
	for _, in := range m.Pending() {
		fmt.Fprintf(&b, "intent %s\n", in.Hash)
	}
	for _, in := range m.RunningPlans() {
		fmt.Fprintf(&b, "plan %d %s %s\n", in.ID, in.Plan, in.Steps)
	}
	fmt.Fprintf(&b, "height %d logical %d\n", m.Height(), m.LogicalNow())
	return b.String()
}

func (fx *worldFixture) replay() {
	live := machineView(fx.m, fx.modules())
	for _, genesis := range []bool{true, false} {
		res, err := world.Rerun(fx.ctx, world.RerunOptions{Name: fixtureWorld, Catalog: fx.cat, Reducers: fx.reg, Storage: fx.st, FromGenesis: genesis})
		from := "genesis"
		if !genesis {
			if res != nil && !res.Snapshot.Valid() {
				continue // no snapshot: the same replay again
			}
			from = "the snapshot at seq " + fmt.Sprint(res.FromSeq-1)
		}
		if err != nil {
			fx.printf("replay from %s: %v", from, err)
			var d *world.DivergenceError
			if errors.As(err, &d) {
				fx.t.Errorf("replay diverges: %v", err)
			}
			continue
		}
		got := machineView(res.Machine, fx.modules())
		if got != live {
			fx.printf("replay from %s: %d records, %d inputs: a different machine:\n%s", from, res.Records, res.Inputs, got)
			fx.t.Errorf("replay from %s gives another machine:\n%s\nlive:\n%s", from, got, live)
			continue
		}
		fx.printf("replay from %s: %d records, %d inputs: same cells, intents and plans", from, res.Records, res.Inputs)
	}
}

func origin(o effects.Origin) string {
	if o.Kind == "plan" {
		return fmt.Sprintf("plan %s#%d step %s", o.Name, o.PlanID, o.Step)
	}
	if o.Key != nil {
		return fmt.Sprintf("%s %s[%s]", o.Kind, o.Name, schema.ValueJSON(o.Key))
	}
	return o.Kind + " " + o.Name
}

var hashRE = regexp.MustCompile(`blake3:[0-9a-f]{64}`)

// clean makes JSON output short and stable across unrelated changes: the
// manifest's hash is @manifest, intents' are their handles, other hashes
// are cut to 12 digits.
func (fx *worldFixture) clean(js []byte) string {
	manifest := fx.cat.ManifestRef().String()
	return hashRE.ReplaceAllStringFunc(string(js), func(s string) string {
		if s == manifest {
			return "@manifest"
		}
		if ref, err := cas.ParseRef(s); err == nil {
			if h, ok := fx.handles[ref]; ok {
				return h
			}
		}
		return s[:len("blake3:")+12]
	})
}

// printRecord prints a record on one line: its seq, its kind and its
// payload, without the stamp (the fixture's clock is fixed; the stamp says
// nothing a fixture checks).
func (fx *worldFixture) printRecord(seq uint64, kind string, payload []byte) {
	v, err := schema.Decode(payload)
	if err != nil {
		fx.printf("%d %s: undecodable: %v", seq, kind, err)
		return
	}
	if m, ok := v.(*schema.Map); ok {
		var es []schema.MapEntry
		for _, e := range m.Entries() {
			if e.Key != "stamp" {
				es = append(es, e)
			}
		}
		v = schema.NewMap(es...)
	}
	fx.printf("%d %s %s", seq, kind, fx.clean(schema.ValueJSON(v)))
}

// jsonValue reads JSON into a schema value without a type: objects become
// text-keyed maps, whole numbers nat or int, other numbers text. The
// machine normalizes it against the schema it is sent as.
func jsonValue(js []byte) (schema.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the value")
	}
	return toValue(x), nil
}

func toValue(x any) schema.Value {
	switch x := x.(type) {
	case map[string]any:
		es := make([]schema.MapEntry, 0, len(x))
		for k, v := range x {
			es = append(es, schema.MapEntry{Key: k, Value: toValue(v)})
		}
		return schema.NewMap(es...)
	case []any:
		l := make([]schema.Value, len(x))
		for i, v := range x {
			l[i] = toValue(v)
		}
		return l
	case json.Number:
		if n, err := x.Int64(); err == nil {
			if n >= 0 {
				return uint64(n)
			}
			return schema.Int(n)
		}
		return x.String()
	}
	return x
}
