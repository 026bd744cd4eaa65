package replay

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// Storage returns in-memory world storage holding the bundle's records and
// blobs.
func (b *Bundle) Storage(ctx context.Context) (*world.MemoryStorage, error) {
	st := world.NewMemoryStorage()
	if err := Import(ctx, b, st.Journal(), st.CAS()); err != nil {
		return nil, err
	}
	return st, nil
}

// AIR loads the bundle's AIR as its air/ folder holds it, with the WASM
// modules beside it (air/modules/), as Load loads a world's folder: the AIR
// edited in the bundle, which --under-manifest replays under.
func (b *Bundle) AIR(reg *reducer.Registry) (*schema.Catalog, error) {
	opts := reg.LoadOptions()
	if b.Dir != "" {
		opts.ModuleDir = filepath.Join(b.Dir, "air")
	}
	cat, err := schema.LoadSources(b.Sources, opts)
	if err != nil && len(b.Modules) == 0 {
		return nil, fmt.Errorf("%w\n(the bundle holds no WASM modules beside its AIR: it was exported before bundles held them; export it again, or put the modules in %s)", err, filepath.Join(b.Dir, "air", schema.ModulesDir))
	}
	return cat, err
}

// Catalog loads the bundle's AIR (AIR). AIR that does not load from the
// bundle's files (a bundle written before bundles held the WASM modules of
// AIR that found them beside its manifest) falls back to the catalog the
// journal last recorded, rebuilt from the bundle's blobs, which hold the
// modules' code.
func (b *Bundle) Catalog(reg *reducer.Registry) (*schema.Catalog, error) {
	cat, err := b.AIR(reg)
	if err == nil || b.Manifest.ManifestRef == "" {
		return cat, err
	}
	ref, perr := cas.ParseRef(b.Manifest.ManifestRef)
	if perr != nil {
		return nil, err
	}
	stored, serr := schema.LoadFromCAS(context.Background(), blobGetter(b.Blobs), ref, reg.LoadOptions())
	if serr != nil {
		return nil, err
	}
	return stored, nil
}

// blobGetter reads a bundle's blobs.
type blobGetter map[cas.Ref][]byte

func (g blobGetter) Get(_ context.Context, ref cas.Ref) ([]byte, error) {
	b, ok := g[ref]
	if !ok {
		return nil, fmt.Errorf("%w: %s", cas.ErrNotFound, ref)
	}
	return bytes.Clone(b), nil
}

// ReplayBundle replays a bundle with the given reducers.
func ReplayBundle(ctx context.Context, b *Bundle, reg *reducer.Registry, fromGenesis bool) (*world.RerunResult, error) {
	return replayBundle(ctx, b, reg, world.RerunOptions{FromGenesis: fromGenesis})
}

// ReplayBundleUnder replays a bundle from genesis under its AIR files,
// whatever manifests its journal recorded (world.RerunOptions
// UnderManifest): what AIR edited in the bundle would derive differently.
func ReplayBundleUnder(ctx context.Context, b *Bundle, reg *reducer.Registry) (*world.RerunResult, error) {
	return replayBundle(ctx, b, reg, world.RerunOptions{UnderManifest: true})
}

// replayBundle replays a bundle under its AIR, in memory, with opts (whose
// Name, Catalog, Reducers and Storage it sets).
func replayBundle(ctx context.Context, b *Bundle, reg *reducer.Registry, opts world.RerunOptions) (*world.RerunResult, error) {
	load := b.Catalog
	if opts.UnderManifest {
		load = b.AIR // the AIR as edited, or an error: never another
	}
	cat, err := load(reg)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.Dir, err)
	}
	st, err := b.Storage(ctx)
	if err != nil {
		return nil, err
	}
	opts.Name, opts.Catalog, opts.Reducers, opts.Storage = b.Manifest.World, cat, reg, st
	return world.Rerun(ctx, opts)
}

// TraceText returns the bundle's timeline as Trace prints it, with cell
// states shown: the golden file of a recorded session.
func (b *Bundle) TraceText() string {
	var out bytes.Buffer
	st := cas.NewMemory()
	for _, data := range b.Blobs {
		_, _ = st.Put(context.Background(), data)
	}
	t := NewTracer(&out, TraceOptions{CAS: st})
	for _, r := range b.Records {
		if err := t.Record(r); err != nil {
			break
		}
	}
	return out.String()
}

// Rebase re-derives a bundle's journal with the current code and rewrites
// the bundle: inputs are kept (receipts are re-pointed at the re-derived
// intents, matched in emission order), every derived record is recomputed,
// snapshots are retaken where the old journal had them.
//
// Rebase refuses, and leaves the bundle as it was, when the re-derived
// journal has more failures of a kind (ReducerError, Rejected, Denied,
// PlanEnded with an error) than the recording: the session's inputs no
// longer mean what they meant when it was recorded (its AIR or a reducer
// changed what it does), and it must be recorded again.
func Rebase(ctx context.Context, b *Bundle, reg *reducer.Registry) error {
	cat, err := b.Catalog(reg)
	if err != nil {
		return err
	}
	st := world.NewMemoryStorage()
	for _, data := range b.Blobs {
		if _, err := st.CAS().Put(ctx, data); err != nil {
			return err
		}
	}
	m := world.NewMachine(cat, reg, st.CAS())
	var oldIntents, newIntents []string
	for _, r := range b.Records {
		switch r.Kind {
		case world.KindIntent:
			oldIntents = append(oldIntents, intentOf(r.Payload))
		case world.KindFork:
			// Re-derived, the records before the fork would no longer be
			// the records of the world it was forked from.
			return fmt.Errorf("bundle %s is a forked world (record %d): it cannot be re-derived; record the session again", b.Dir, r.Seq)
		}
	}
	remap := map[string]string{}
	head := journal.Head{}
	for _, r := range b.Records {
		if r.Kind == world.KindSnapshot {
			e, blob, err := m.Snapshot()
			if err != nil {
				return err
			}
			if head, err = st.Commit(ctx, b.Manifest.World, head, []journal.Entry{e}, [][]byte{blob}); err != nil {
				return err
			}
			continue
		}
		if !world.IsInput(r.Kind) {
			continue
		}
		in, err := world.DecodeInput(r)
		if err != nil {
			return err
		}
		if in.Kind == world.KindReceipt {
			if n, ok := remap[in.Intent.String()]; ok {
				in.Intent, _ = cas.ParseRef(n)
			}
		}
		if in.Kind != world.KindManifest {
			in.Stamp.JournalHeight = m.Height()
		}
		step, err := m.Apply(ctx, in)
		if err != nil {
			return fmt.Errorf("re-deriving record %d: %w", r.Seq, err)
		}
		for _, e := range step.Records {
			if e.Kind == world.KindIntent {
				newIntents = append(newIntents, intentOf(e.Payload))
				if k := len(newIntents) - 1; k < len(oldIntents) {
					remap[oldIntents[k]] = newIntents[k]
				}
			}
		}
		if head, err = st.Commit(ctx, b.Manifest.World, head, step.Records, step.Blobs); err != nil {
			return err
		}
	}
	var derived []journal.Record
	if err := st.Journal().Read(ctx, b.Manifest.World, 1, func(r journal.Record) error {
		derived = append(derived, r)
		return nil
	}); err != nil {
		return err
	}
	if err := newFailures(b.Records, derived); err != nil {
		return fmt.Errorf("%w; record the session again (-record) instead of re-deriving it", err)
	}
	tmp := b.Dir + ".rebase"
	_ = os.RemoveAll(tmp)
	if _, err := Export(ctx, st.Journal(), st.CAS(), b.Manifest.World, b.Sources, b.Modules, tmp); err != nil {
		return err
	}
	if trace, err := os.ReadFile(filepath.Join(b.Dir, "trace.txt")); err == nil {
		_ = os.WriteFile(filepath.Join(tmp, "trace.txt"), trace, 0o644)
	}
	old := b.Dir + ".old"
	_ = os.RemoveAll(old)
	if err := os.Rename(b.Dir, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, b.Dir); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

func intentOf(payload []byte) string {
	v, err := schema.Decode(payload)
	if err != nil {
		return ""
	}
	m, _ := v.(*schema.Map)
	x, _ := m.Get("intent")
	s, _ := x.(string)
	return s
}

// failure returns the kind of failure a record reports ("" for none):
// ReducerError, Rejected, Denied, or "PlanEnded error".
func failure(r journal.Record) string {
	switch r.Kind {
	case world.KindReducerError, world.KindRejected, world.KindDenied:
		return r.Kind
	case world.KindPlanEnded:
		v, err := schema.Decode(r.Payload)
		if err != nil {
			return ""
		}
		if st, _ := schema.FieldPath(v, "status").(string); st == "error" {
			return "PlanEnded error"
		}
	}
	return ""
}

// newFailures reports the first failure of a kind that derived has more
// of than recorded.
func newFailures(recorded, derived []journal.Record) error {
	had := map[string]int{}
	for _, r := range recorded {
		if k := failure(r); k != "" {
			had[k]++
		}
	}
	seen := map[string]int{}
	for _, r := range derived {
		k := failure(r)
		if k == "" {
			continue
		}
		if seen[k]++; seen[k] > had[k] {
			v, _ := schema.Decode(r.Payload)
			return fmt.Errorf("re-derived, the session has a %s the recording does not (record %d: %s)", k, r.Seq, schema.String(v))
		}
	}
	return nil
}
