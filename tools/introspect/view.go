package introspect

import (
	"context"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
)

// View is what the introspect tools and effects read of a world.
// world/worldview makes one of a *world.World; tests may implement it over
// anything.
//
// Name, Catalog, Journal and CAS never change for a View. Head, State and
// Cells read the live world: each returns the head its answer was read at,
// so that a state and the height it belongs to are always read together.
type View interface {
	// Name returns the world's name in the journal.
	Name() string
	// Catalog returns the loaded manifest the world runs.
	Catalog() *schema.Catalog
	// Journal returns the world's journal, to read history from.
	Journal() journal.Reader
	// CAS returns the world's blob store: cell states, manifests and defs
	// of the past are read from it.
	CAS() cas.Getter
	// Head returns the journal head and the manifest the world runs at it.
	Head(ctx context.Context) (Head, error)
	// State returns a cell's current state (key nil for a reducer that is
	// not keyed; otherwise a key normalized against the reducer's key
	// schema) and the head it was read at. ok is false when the cell has
	// no state.
	State(ctx context.Context, module string, key schema.Value) (c Cell, ok bool, at Head, err error)
	// Cells returns a reducer's current cells in canonical key order and
	// the head they were read at. A reducer without cells has none; an
	// unknown module has none either (callers check the catalog first).
	Cells(ctx context.Context, module string) ([]Cell, Head, error)
}

// Head is a world's journal head together with the manifest the world
// runs at it.
//
// Head supports equality with ==.
type Head struct {
	Height   uint64  // seq of the newest record; 0 for a world without records
	Hash     cas.Ref // hash of the newest record; the zero Ref for an empty journal
	Manifest cas.Ref // hash of the manifest node the world runs
}

// Cell is one reducer cell.
type Cell struct {
	Key   schema.Value // nil for a reducer that is not keyed
	State schema.Value // the state, canonical
	Ref   cas.Ref      // hash of the state's canonical CBOR (its CAS node)
}

// ReadMeta says what a read saw, as sys/ReadMeta@1 does: the journal
// height the answer belongs to and the manifest the world ran at that
// height. demiurge reads the live world or its journal, never a snapshot,
// so Snapshot is always the zero Ref (snapshot_hash null).
type ReadMeta struct {
	Height   uint64
	Manifest cas.Ref
	Snapshot cas.Ref
}

// Value returns the meta as a sys/ReadMeta@1 value.
func (m ReadMeta) Value() schema.Value {
	var snap schema.Value
	if m.Snapshot.Valid() {
		snap = m.Snapshot.String()
	}
	return schema.Record("journal_height", m.Height, "snapshot_hash", snap, "manifest_hash", m.Manifest.String())
}

// metaJSON is ReadMeta as the tools print it.
type metaJSON struct {
	JournalHeight uint64  `json:"journal_height"`
	ManifestHash  string  `json:"manifest_hash"`
	SnapshotHash  *string `json:"snapshot_hash"`
}

func (m ReadMeta) json() metaJSON {
	out := metaJSON{JournalHeight: m.Height, ManifestHash: m.Manifest.String()}
	if m.Snapshot.Valid() {
		s := m.Snapshot.String()
		out.SnapshotHash = &s
	}
	return out
}
