package introspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/levenshtein"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
)

// Errors of reads. Messages say what was asked and what exists; check
// them with errors.Is.
var (
	// ErrNotFound is returned (wrapped) for a reducer, module, schema or
	// def the manifest does not have. The message lists the ones it has.
	ErrNotFound = errors.New("introspect: not found")
	// ErrUnavailable is returned (wrapped) when the height a consistency
	// asks for cannot be served: exact:<h> above the journal head, or
	// at_least:<h> when the head did not reach h in time. The message
	// names the head.
	ErrUnavailable = errors.New("introspect: height not available")
	// ErrInvalid is returned (wrapped) for a request that cannot be
	// answered as asked: a key that does not fit the reducer's key schema,
	// a key for a reducer that is not keyed, a state that does not decode.
	ErrInvalid = errors.New("introspect: invalid request")
)

// Options tune the tools and effects. The zero value (or nil) is the
// default.
type Options struct {
	// MaxWait bounds how long at_least:<h> waits for the journal head to
	// reach h before it fails (default DefaultMaxWait; negative: it fails
	// at once). The caller's ctx bounds the wait too.
	MaxWait time.Duration
	// OutputLimit is the most bytes of Stdout a tool returns (default
	// DefaultOutputLimit); longer output is cut on a UTF-8 boundary and a
	// note of the original size is appended.
	OutputLimit int
}

// Defaults of Options.
const (
	DefaultMaxWait     = 5 * time.Second
	DefaultOutputLimit = 50_000
)

// pollInterval is how often at_least looks at the head while it waits.
const pollInterval = 10 * time.Millisecond

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.MaxWait == 0 {
		out.MaxWait = DefaultMaxWait
	}
	if out.OutputLimit <= 0 {
		out.OutputLimit = DefaultOutputLimit
	}
	return out
}

// reader serves reads of a View at a consistency.
type reader struct {
	v    View
	opts Options
}

func newReader(v View, opts *Options) *reader {
	return &reader{v: v, opts: opts.withDefaults()}
}

// waitHeight returns the head once it is at height h or above, waiting
// up to MaxWait and while ctx lasts.
func (r *reader) waitHeight(ctx context.Context, h uint64) (Head, error) {
	head, err := r.v.Head(ctx)
	if err != nil || head.Height >= h {
		return head, err
	}
	if r.opts.MaxWait < 0 {
		return Head{}, fmt.Errorf("%w: at_least:%d: the journal head is %d", ErrUnavailable, h, head.Height)
	}
	timer := time.NewTimer(r.opts.MaxWait)
	defer timer.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	ended := func() (Head, error) {
		return Head{}, fmt.Errorf("%w: at_least:%d: the journal head was %d when the call ended (%w)", ErrUnavailable, h, head.Height, context.Cause(ctx))
	}
	for {
		select {
		case <-ctx.Done():
			return ended()
		case <-timer.C:
			return Head{}, fmt.Errorf("%w: at_least:%d: the journal head is %d and did not reach %d within %s", ErrUnavailable, h, head.Height, h, r.opts.MaxWait)
		case <-tick.C:
			now, err := r.v.Head(ctx)
			switch {
			case err != nil && ctx.Err() != nil:
				return ended()
			case err != nil:
				return Head{}, err
			case now.Height >= h:
				return now, nil
			}
			head = now
		}
	}
}

// servesNow reports whether a read at consistency (a ParseConsistency
// form, or "" for head) is answered at once: every read is but
// at_least:<h> above the head, which waits for the world to move on. A
// consistency that does not parse is answered at once, with an error.
func (r *reader) servesNow(ctx context.Context, consistency string) bool {
	c, err := parseConsistency(consistency)
	if err != nil || c.Mode != ModeAtLeast {
		return true
	}
	h, err := r.v.Head(ctx)
	return err == nil && h.Height >= c.Height
}

// checkExact returns the head after checking that an exact height can be
// served: from 1 up to the head.
func (r *reader) checkExact(ctx context.Context, h uint64) (Head, error) {
	head, err := r.v.Head(ctx)
	if err != nil {
		return Head{}, err
	}
	switch {
	case h > head.Height:
		return Head{}, fmt.Errorf("%w: exact:%d is above the journal head %d (use exact:<h> with h <= %d, or at_least:%d to wait for it)", ErrUnavailable, h, head.Height, head.Height, h)
	case h == 0:
		return Head{}, fmt.Errorf("%w: exact:0 is before the journal's first record; heights start at 1 (the head is %d)", ErrUnavailable, head.Height)
	}
	return head, nil
}

// meta returns the ReadMeta of a head.
func meta(h Head) ReadMeta { return ReadMeta{Height: h.Height, Manifest: h.Manifest} }

// ---- history: the journal up to a height ----

// history is what the journal says about one reducer up to a height.
type history struct {
	manifest cas.Ref // the newest Manifest record's ref
	cells    map[string]*histCell
}

type histCell struct {
	key        schema.Value
	ref        cas.Ref
	lastActive uint64 // logical time of the input whose step last wrote the cell
}

// The journal records introspect reads, as world writes them
// (world/records.go; TestRecordKindsMatchWorld keeps the two equal).
const (
	recManifest = "Manifest"    // {manifest}
	recEvent    = "DomainEvent" // {schema, value, key?, stamp}
	recReceipt  = "Receipt"     // {intent, status, ..., stamp}
	recState    = "State"       // {reducer, key?, state: ref or null}
)

// recordFields decodes a record's payload, which is a CBOR map.
func recordFields(rec journal.Record) (*schema.Map, error) {
	v, err := schema.Decode(rec.Payload)
	if err != nil {
		return nil, fmt.Errorf("record %d (%s): %w", rec.Seq, rec.Kind, err)
	}
	m, ok := v.(*schema.Map)
	if !ok {
		return nil, fmt.Errorf("record %d (%s) is not a CBOR map", rec.Seq, rec.Kind)
	}
	return m, nil
}

// recordManifest returns the manifest a Manifest record names.
func recordManifest(rec journal.Record) (cas.Ref, error) {
	m, err := recordFields(rec)
	if err != nil {
		return cas.Ref{}, err
	}
	s, _ := m.Get("manifest")
	str, _ := s.(string)
	ref, err := cas.ParseRef(str)
	if err != nil {
		return cas.Ref{}, fmt.Errorf("record %d (%s): manifest: %w", rec.Seq, rec.Kind, err)
	}
	return ref, nil
}

// recordLogicalNow returns the logical time of an input's stamp.
func recordLogicalNow(rec journal.Record) (uint64, error) {
	m, err := recordFields(rec)
	if err != nil {
		return 0, err
	}
	st, _ := m.Get("stamp")
	sm, ok := st.(*schema.Map)
	if !ok {
		return 0, fmt.Errorf("record %d (%s) has no stamp", rec.Seq, rec.Kind)
	}
	x, _ := sm.Get("logical")
	n, _ := x.(uint64)
	return n, nil
}

// errStop ends a journal read early.
var errStop = errors.New("stop")

// scan reads the journal from its start to height h (inclusive) and
// returns the manifest at h and the cells of module alive at h. With
// onlyKey set it keeps only the cell of that key (EncodeBody bytes; "" for
// a reducer that is not keyed). With stamps it also tracks each cell's last
// activity, which costs decoding every input.
func (r *reader) scan(ctx context.Context, h uint64, module string, onlyKey *string, stamps bool) (*history, error) {
	hist := &history{cells: map[string]*histCell{}}
	var logical uint64
	name := r.v.Name()
	err := r.v.Journal().Read(ctx, name, 1, func(rec journal.Record) error {
		if rec.Seq > h {
			return errStop
		}
		switch rec.Kind {
		case recManifest:
			m, err := recordManifest(rec)
			if err != nil {
				return err
			}
			hist.manifest = m
		case recEvent, recReceipt:
			if !stamps {
				return nil
			}
			n, err := recordLogicalNow(rec)
			if err != nil {
				return err
			}
			logical = n
		case recState:
			if module == "" {
				return nil
			}
			return hist.state(rec, module, onlyKey, logical)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("introspect: read the journal of world %s up to height %d: %w", name, h, err)
	}
	if !hist.manifest.Valid() {
		return nil, fmt.Errorf("%w: world %s has no manifest at height %d", ErrUnavailable, name, h)
	}
	return hist, nil
}

// state applies one State record {reducer, key?, state?} to the history.
func (hist *history) state(rec journal.Record, module string, onlyKey *string, logical uint64) error {
	m, err := recordFields(rec)
	if err != nil {
		return err
	}
	if red, _ := m.Get("reducer"); red != module {
		return nil
	}
	key, _ := m.Get("key")
	kb, err := keyBytes(key)
	if err != nil {
		return fmt.Errorf("record %d (%s): key: %w", rec.Seq, rec.Kind, err)
	}
	if onlyKey != nil && kb != *onlyKey {
		return nil
	}
	st, ok := m.Get("state")
	if !ok || st == nil {
		delete(hist.cells, kb)
		return nil
	}
	s, _ := st.(string)
	ref, err := cas.ParseRef(s)
	if err != nil {
		return fmt.Errorf("record %d (%s): state: %w", rec.Seq, rec.Kind, err)
	}
	hist.cells[kb] = &histCell{key: key, ref: ref, lastActive: logical}
	return nil
}

// sortedCells returns the cells in canonical key order.
func (hist *history) sortedCells() []*histCell {
	keys := make([]string, 0, len(hist.cells))
	for k := range hist.cells {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*histCell, len(keys))
	for i, k := range keys {
		out[i] = hist.cells[k]
	}
	return out
}

// keyBytes is a cell key's identity: its canonical CBOR without prefix,
// "" for no key (the machine's own convention).
func keyBytes(key schema.Value) (string, error) {
	if key == nil {
		return "", nil
	}
	b, err := schema.EncodeBody(key)
	return string(b), err
}

// loadState reads a state node from CAS.
func (r *reader) loadState(ctx context.Context, ref cas.Ref) (schema.Value, []byte, error) {
	b, err := r.v.CAS().Get(ctx, ref)
	if err != nil {
		return nil, nil, fmt.Errorf("introspect: load state %s: %w", ref, err)
	}
	v, err := schema.Decode(b)
	if err != nil {
		return nil, nil, fmt.Errorf("introspect: decode state %s: %w", ref, err)
	}
	return v, b, nil
}

// ---- reducers and cells at a consistency ----

// reducerDef returns the reducer module called name, or an error listing
// the reducers that exist.
func (r *reader) reducerDef(name string) (*schema.DefModule, error) {
	cat := r.v.Catalog()
	mod, ok := cat.Module(name)
	if !ok {
		return nil, fmt.Errorf("%w: unknown reducer %q; the world's reducers are: %s", ErrNotFound, clip(name), listNames(reducerNames(cat), name))
	}
	if mod.Reducer == nil {
		return nil, fmt.Errorf("%w: %s is a %s module, not a reducer; the world's reducers are: %s", ErrNotFound, name, mod.ModuleKind, listNames(reducerNames(cat), name))
	}
	return mod, nil
}

// reducerNames returns the reducer modules of a catalog, user modules
// first, each group sorted.
func reducerNames(cat *schema.Catalog) []string {
	var user, sys []string
	for _, n := range cat.Names(schema.KindDefModule) {
		if m, _ := cat.Module(n); m.Reducer != nil {
			if isBuiltin(schema.KindDefModule, n) {
				sys = append(sys, n)
			} else {
				user = append(user, n)
			}
		}
	}
	return append(user, sys...)
}

func isBuiltin(kind, name string) bool {
	_, ok := schema.Builtin(kind, name)
	return ok
}

// normalizeKey checks a cell key against the reducer's key schema: a
// keyed reducer's key is normalized, a key for one that is not keyed is an
// error. key nil asks for no key.
func (r *reader) normalizeKey(mod *schema.DefModule, key schema.Value) (schema.Value, error) {
	if key == nil {
		return nil, nil
	}
	if mod.KeySchema == "" {
		return nil, fmt.Errorf("%w: reducer %s is not keyed; leave the key out", ErrInvalid, mod.Name)
	}
	nk, err := schema.Normalize(r.v.Catalog(), schema.RefType(mod.KeySchema), key)
	if err != nil {
		return nil, fmt.Errorf("%w: the key does not fit %s, the key schema of %s: %v", ErrInvalid, mod.KeySchema, mod.Name, err)
	}
	return nk, nil
}

// cellRead is one cell's state as a read saw it.
type cellRead struct {
	cell  Cell
	ok    bool   // the cell has a state
	bytes []byte // the state's canonical CBOR, when ok
	meta  ReadMeta
}

// state reads one cell at a consistency. key must be normalized (nil for
// a reducer that is not keyed).
func (r *reader) state(ctx context.Context, module string, key schema.Value, c Consistency) (cellRead, error) {
	switch c.Mode {
	case ModeHead, ModeAtLeast:
		if c.Mode == ModeAtLeast {
			if _, err := r.waitHeight(ctx, c.Height); err != nil {
				return cellRead{}, err
			}
		}
		cell, ok, at, err := r.v.State(ctx, module, key)
		if err != nil {
			return cellRead{}, err
		}
		out := cellRead{cell: cell, ok: ok, meta: meta(at)}
		if ok {
			if out.bytes, err = schema.Encode(cell.State); err != nil {
				return cellRead{}, fmt.Errorf("introspect: encode state of %s: %w", module, err)
			}
		}
		return out, nil
	}
	head, err := r.checkExact(ctx, c.Height)
	if err != nil {
		return cellRead{}, err
	}
	if c.Height == head.Height {
		// The head itself: the live state, if no commit came meanwhile.
		cell, ok, at, err := r.v.State(ctx, module, key)
		if err == nil && at.Height == c.Height {
			out := cellRead{cell: cell, ok: ok, meta: meta(at)}
			if !ok {
				return out, nil
			}
			if out.bytes, err = schema.Encode(cell.State); err == nil {
				return out, nil
			}
		}
	}
	kb, err := keyBytes(key)
	if err != nil {
		return cellRead{}, fmt.Errorf("%w: key: %v", ErrInvalid, err)
	}
	hist, err := r.scan(ctx, c.Height, module, &kb, false)
	if err != nil {
		return cellRead{}, err
	}
	out := cellRead{cell: Cell{Key: key}, meta: ReadMeta{Height: c.Height, Manifest: hist.manifest}}
	hc, ok := hist.cells[kb]
	if !ok {
		return out, nil
	}
	st, b, err := r.loadState(ctx, hc.ref)
	if err != nil {
		return cellRead{}, err
	}
	out.cell.State, out.cell.Ref, out.ok, out.bytes = st, hc.ref, true, b
	return out, nil
}

// cellInfo is one cell of a listing.
type cellInfo struct {
	key        schema.Value
	ref        cas.Ref
	size       uint64 // bytes of the state's canonical CBOR
	lastActive uint64 // logical ns of the input that last changed the cell; 0 unknown
}

// cells lists a reducer's cells at a consistency, in canonical key
// order. With stamps it reads the journal for each cell's last activity
// (and sizes from CAS).
func (r *reader) cells(ctx context.Context, module string, c Consistency, stamps bool) ([]cellInfo, ReadMeta, error) {
	var h uint64
	switch c.Mode {
	case ModeHead, ModeAtLeast:
		if c.Mode == ModeAtLeast {
			if _, err := r.waitHeight(ctx, c.Height); err != nil {
				return nil, ReadMeta{}, err
			}
		}
		cells, at, err := r.v.Cells(ctx, module)
		if err != nil {
			return nil, ReadMeta{}, err
		}
		out := make([]cellInfo, len(cells))
		for i, cell := range cells {
			b, err := schema.Encode(cell.State)
			if err != nil {
				return nil, ReadMeta{}, fmt.Errorf("introspect: encode state of %s: %w", module, err)
			}
			out[i] = cellInfo{key: cell.Key, ref: cell.Ref, size: uint64(len(b))}
		}
		if !stamps || len(out) == 0 {
			return out, meta(at), nil
		}
		hist, err := r.scan(ctx, at.Height, module, nil, true)
		if err != nil {
			return nil, ReadMeta{}, err
		}
		for i := range out {
			kb, _ := keyBytes(out[i].key)
			if hc, ok := hist.cells[kb]; ok && hc.ref == out[i].ref {
				out[i].lastActive = hc.lastActive
			}
		}
		return out, meta(at), nil
	}
	if _, err := r.checkExact(ctx, c.Height); err != nil {
		return nil, ReadMeta{}, err
	}
	h = c.Height
	hist, err := r.scan(ctx, h, module, nil, stamps)
	if err != nil {
		return nil, ReadMeta{}, err
	}
	var out []cellInfo
	for _, hc := range hist.sortedCells() {
		ci := cellInfo{key: hc.key, ref: hc.ref, lastActive: hc.lastActive}
		if stamps {
			_, b, err := r.loadState(ctx, hc.ref)
			if err != nil {
				return nil, ReadMeta{}, err
			}
			ci.size = uint64(len(b))
		}
		out = append(out, ci)
	}
	return out, ReadMeta{Height: h, Manifest: hist.manifest}, nil
}

// metaAt returns the ReadMeta a read at c is served at, waiting for
// at_least. For exact:<h> it is h and the manifest the world ran at h.
func (r *reader) metaAt(ctx context.Context, c Consistency) (ReadMeta, error) {
	switch c.Mode {
	case ModeHead:
		h, err := r.v.Head(ctx)
		return meta(h), err
	case ModeAtLeast:
		h, err := r.waitHeight(ctx, c.Height)
		return meta(h), err
	}
	head, err := r.checkExact(ctx, c.Height)
	if err != nil {
		return ReadMeta{}, err
	}
	if c.Height == head.Height {
		return meta(head), nil
	}
	hist, err := r.scan(ctx, c.Height, "", nil, false)
	if err != nil {
		return ReadMeta{}, err
	}
	return ReadMeta{Height: c.Height, Manifest: hist.manifest}, nil
}

// node returns the canonical bytes of a def or manifest node: from the
// catalog when it holds it, else from CAS (the manifests a world ran
// before are there).
func (r *reader) node(ctx context.Context, ref cas.Ref) ([]byte, error) {
	if b, ok := r.v.Catalog().Node(ref); ok {
		return b, nil
	}
	b, err := r.v.CAS().Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("introspect: load node %s: %w", ref, err)
	}
	return b, nil
}

// listNames renders names for an error message: all of them when few,
// else the ones closest to want and a count.
func listNames(names []string, want string) string {
	const max = 20
	if len(names) == 0 {
		return "(none)"
	}
	if len(names) <= max {
		return joinNames(names)
	}
	ranked := append([]string(nil), names...)
	sort.SliceStable(ranked, func(i, j int) bool { return distance(ranked[i], want) < distance(ranked[j], want) })
	return fmt.Sprintf("%s, … (%d in all; the closest shown)", joinNames(ranked[:max]), len(names))
}

func joinNames(names []string) string {
	var b []byte
	for i, n := range names {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, n...)
	}
	return string(b)
}

// distance is the Levenshtein distance of two names, for suggestions.
func distance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return max(len(a), len(b))
	}
	return levenshtein.Distance(a, b)
}
