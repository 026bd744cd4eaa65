package replay_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/replay/replaytest"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// TestKeepStates: a state divergence keeps both states in a store of
// their own, which the report names, and from which each reads back as
// the state the report shows.
func TestKeepStates(t *testing.T) {
	b, err := replay.Read(record(t, "testdata/mut", hub{}, 0))
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	reg.MustRegister("mut/Hub@1", hub{countBy: 2})
	_, err = replay.ReplayBundle(t.Context(), b, reg, true)
	d, ok := err.(*world.DivergenceError)
	if !ok || d.JournalState == nil || d.DerivedState == nil {
		t.Fatalf("err %v; want a divergence of two states", err)
	}
	dir, err2 := replay.Keep(t.Context(), err)
	if err2 != nil || dir == "" {
		t.Fatalf("Keep = %q, %v", dir, err2)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	got := replay.DescribeWith(err, replay.DescribeOptions{KeptIn: dir})
	for _, want := range []string{
		"\na replay writes nothing to the store it reads; what the diverging step derived is kept in the store " + dir + ", with the journal's state:\n",
		"  demiurge --store " + dir + " cas get --json " + d.JournalState.Ref.String() + "   # the journal's state\n",
		"  demiurge --store " + dir + " cas get --json " + d.DerivedState.Ref.String() + "   # the replayed state",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	s, err := store.Open(dir, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, sv := range []*world.StateValue{d.JournalState, d.DerivedState} {
		data, err := s.CAS().Get(t.Context(), sv.Ref)
		if err != nil {
			t.Fatalf("state %s: %v", sv.Ref, err)
		}
		v, err := schema.Decode(data)
		if err != nil || !schema.Equal(v, sv.Value) {
			t.Errorf("state %s reads back as %v (%v); want %v", sv.Ref, v, err, sv.Value)
		}
	}
	// Nothing to keep: no directory.
	if dir, err := replay.Keep(t.Context(), os.ErrNotExist); dir != "" || err != nil {
		t.Errorf("Keep of another error = %q, %v", dir, err)
	}
}

// TestDescribeManifestDivergence: replayed under AIR whose plan changed,
// the report names the def whose hash differs from the manifest the
// record was written under, and shows its JSON's diff; a changed trigger
// shows the manifest's own fields.
func TestDescribeManifestDivergence(t *testing.T) {
	b, err := replay.Read(record(t, "testdata/mut", hub{}, 0))
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	reg.MustRegister("mut/Hub@1", hub{})
	mb := *b
	mb.Sources = sources(t, mutateAIR(t, `"method": "GET"`, `"method": "POST"`))
	_, err = replay.ReplayBundleUnder(t.Context(), &mb, reg)
	if err == nil {
		t.Fatal("a changed plan replays")
	}
	got := replay.Describe(err)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^the record was written under manifest blake3:[0-9a-f]{12} and replayed under manifest blake3:[0-9a-f]{12}; 1 def differs:\n  defplan mut/fetch@1: blake3:[0-9a-f]{12} → blake3:[0-9a-f]{12}\n`),
		regexp.MustCompile(`(?m)^--- defplan mut/fetch@1 in manifest blake3:[0-9a-f]{12}\n\+\+\+ defplan mut/fetch@1 in manifest blake3:[0-9a-f]{12}\n`),
		regexp.MustCompile(`(?m)^-\s+"method": "GET",\n\+\s+"method": "POST",$`),
	} {
		if !want.MatchString(got) {
			t.Errorf("the report does not match %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "the manifests' own fields") {
		t.Errorf("the report shows the manifests' fields, which are the same:\n%s", got)
	}
}

// TestDescribeManifestFields: a manifest that pins the same defs but
// routes differently is shown by its own fields.
func TestDescribeManifestFields(t *testing.T) {
	b, err := replay.Read(record(t, "testdata/mut", hub{}, 0))
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	reg.MustRegister("mut/Hub@1", hub{})
	air := mutateAIR(t, "", "")
	m := filepath.Join(air, "manifest.air.json")
	data, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m, []byte(strings.Replace(string(data), `, "correlate_by": "n"`, ``, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	mb := *b
	mb.Sources = sources(t, air)
	_, err = replay.ReplayBundleUnder(t.Context(), &mb, reg)
	if err == nil {
		t.Fatal("a trigger without correlation replays")
	}
	got := replay.Describe(err)
	if !strings.Contains(got, ", which pin the same defs\nthe manifests' own fields (routing, triggers, defaults, bindings) differ:\n--- manifest ") {
		t.Errorf("the report does not show the manifests' fields:\n%s", got)
	}
}

// sources reads the AIR files of dir.
func sources(t *testing.T, dir string) []schema.Source {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.Source
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, schema.Source{Name: e.Name(), Data: data})
	}
	return out
}

// fakeT is a testing.TB that records what a test helper reports.
type fakeT struct {
	testing.TB
	mu     sync.Mutex
	out    strings.Builder
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	f.out.WriteString(strings.TrimSuffix(sprintf(format, args...), "\n") + "\n")
}
func (f *fakeT) Fatal(args ...any)               { f.Fatalf("%s", sprint(args...)) }
func (f *fakeT) Logf(format string, args ...any) {}

// TestCheckGoldenExplains: a golden test that diverges prints the report
// replay prints: the state's difference by field, and where both states
// are kept.
func TestCheckGoldenExplains(t *testing.T) {
	dir := record(t, "testdata/mut", hub{}, 0)
	reg := reducer.NewRegistry()
	reg.MustRegister("mut/Hub@1", hub{countBy: 2})
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		replaytest.CheckGolden(ft, dir, reg, false)
	}()
	<-done
	got := ft.out.String()
	if !ft.failed {
		t.Fatal("a diverging session passes its golden test")
	}
	kept := regexp.MustCompile(`(?m)^  demiurge --store (\S+) cas get --json (blake3:[0-9a-f]{64})   # the replayed state$`).FindStringSubmatch(got)
	for _, want := range []string{
		"replay diverges: world mut, seq ", "the state of mut/Hub@1 differs at 1 path:\n  count: 1 → 2\n",
		"rerun with -update to re-derive the session",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the golden test's output lacks %q:\n%s", want, got)
		}
	}
	if kept == nil {
		t.Fatalf("the golden test's output does not say where the replayed state is kept:\n%s", got)
	}
	t.Cleanup(func() { os.RemoveAll(kept[1]) })
	s, err := store.Open(kept[1], &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CAS().Get(t.Context(), cas.MustParseRef(kept[2])); err != nil {
		t.Errorf("the replayed state is not where the report says: %v", err)
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
func sprint(args ...any) string                 { return fmt.Sprint(args...) }
