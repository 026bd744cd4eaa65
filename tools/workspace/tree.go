package workspace

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// Kinds of tree entries.
const (
	KindFile = "file"
	KindDir  = "dir"
)

// Modes of tree entries (Unix permission bits).
const (
	ModeFile uint64 = 0o644 // a regular file
	ModeExec uint64 = 0o755 // an executable file
	ModeDir  uint64 = 0o755 // a directory
	// MaxMode is the largest mode a file may have.
	MaxMode uint64 = 0o777
)

// Schema names of tree nodes.
const (
	TreeSchema  = "sys/WorkspaceTree@2"
	EntrySchema = "sys/WorkspaceEntry@2"
)

// Store is what tree operations that write need: reading and putting
// blobs. cas.Store satisfies it.
type Store interface {
	cas.Getter
	cas.Putter
}

// Entry is one entry of a tree node (sys/WorkspaceEntry@2).
type Entry struct {
	Name string
	Kind string // KindFile or KindDir
	// Hash is the file's raw blob, or the directory's tree node.
	Hash cas.Ref
	// Size is the file's length in bytes; for a directory, the total size
	// of the files under it.
	Size uint64
	Mode uint64
	// Annotations is the entry's annotations_hash; the zero Ref for none.
	Annotations cas.Ref
}

// Tree is a directory node (sys/WorkspaceTree@2): its entries sorted by
// name, names unique.
type Tree struct {
	Entries     []Entry
	Annotations cas.Ref // the zero Ref for none
}

// find returns the index of the entry named name, or where it would go.
func (t *Tree) find(name string) (int, bool) {
	i := sort.Search(len(t.Entries), func(i int) bool { return t.Entries[i].Name >= name })
	return i, i < len(t.Entries) && t.Entries[i].Name == name
}

// set inserts or replaces e, keeping the entries sorted.
func (t *Tree) set(e Entry) {
	i, ok := t.find(e.Name)
	if ok {
		t.Entries[i] = e
		return
	}
	t.Entries = append(t.Entries, Entry{})
	copy(t.Entries[i+1:], t.Entries[i:])
	t.Entries[i] = e
}

// remove deletes the entry at index i.
func (t *Tree) remove(i int) {
	t.Entries = append(t.Entries[:i], t.Entries[i+1:]...)
}

// Size returns the total size of the files under t.
func (t *Tree) Size() uint64 {
	var n uint64
	for _, e := range t.Entries {
		n += e.Size
	}
	return n
}

// clone returns a copy of t that can be changed without changing t.
func (t *Tree) clone() *Tree {
	return &Tree{Entries: append([]Entry(nil), t.Entries...), Annotations: t.Annotations}
}

func optRef(r cas.Ref) schema.Value {
	if !r.Valid() {
		return nil
	}
	return r.String()
}

// Value returns t as a canonical sys/WorkspaceTree@2 value.
func (t *Tree) Value() schema.Value {
	entries := make([]schema.Value, len(t.Entries))
	for i, e := range t.Entries {
		entries[i] = schema.Record("name", e.Name, "kind", e.Kind, "hash", e.Hash.String(),
			"size", e.Size, "mode", e.Mode, "annotations_hash", optRef(e.Annotations))
	}
	return schema.Record("entries", entries, "annotations_hash", optRef(t.Annotations))
}

// check verifies the invariants of a tree node.
func (t *Tree) check() error {
	for i, e := range t.Entries {
		if !validName(e.Name) {
			return fmt.Errorf("%w: entry %d has the invalid name %q", ErrBadTree, i, e.Name)
		}
		if i > 0 && t.Entries[i-1].Name >= e.Name {
			return fmt.Errorf("%w: entries %q and %q are not sorted by name or not unique", ErrBadTree, t.Entries[i-1].Name, e.Name)
		}
		if e.Kind != KindFile && e.Kind != KindDir {
			return fmt.Errorf("%w: entry %q has kind %q (want %s or %s)", ErrBadTree, e.Name, e.Kind, KindFile, KindDir)
		}
		if !e.Hash.Valid() {
			return fmt.Errorf("%w: entry %q has no hash", ErrBadTree, e.Name)
		}
	}
	return nil
}

// Encode returns the canonical CBOR of t, the bytes it is stored and
// hashed as: those of schema.Encode(t.Value()), written directly. It fails
// if t breaks the invariants of a tree node.
func (t *Tree) Encode() ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 32+len(t.Entries)*160)
	b = append(b, cas.SelfDescribePrefix...)
	// Record keys in canonical order: shorter first, then bytewise.
	b = cborHead(b, 5, 2)
	b = cborText(b, "entries")
	b = cborHead(b, 4, uint64(len(t.Entries)))
	for i := range t.Entries {
		e := &t.Entries[i]
		b = cborHead(b, 5, 6)
		b = cborText(b, "hash")
		b = cborText(b, e.Hash.String())
		b = cborText(b, "kind")
		b = cborText(b, e.Kind)
		b = cborText(b, "mode")
		b = cborHead(b, 0, e.Mode)
		b = cborText(b, "name")
		b = cborText(b, e.Name)
		b = cborText(b, "size")
		b = cborHead(b, 0, e.Size)
		b = cborText(b, "annotations_hash")
		b = cborOptRef(b, e.Annotations)
	}
	b = cborText(b, "annotations_hash")
	b = cborOptRef(b, t.Annotations)
	return b, nil
}

// cborHead appends the head of a CBOR item of a major type with argument n,
// in its shortest form.
func cborHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return append(b, m|25, byte(n>>8), byte(n))
	case n <= 0xffffffff:
		return append(b, m|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, m|27, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func cborText(b []byte, s string) []byte {
	return append(cborHead(b, 3, uint64(len(s))), s...)
}

func cborOptRef(b []byte, r cas.Ref) []byte {
	if !r.Valid() {
		return append(b, 0xf6) // null
	}
	return cborText(b, r.String())
}

// DecodeTree decodes and checks a tree node: it must be a
// sys/WorkspaceTree@2 value (a record of exactly its fields, entries of
// exactly theirs, a missing option field counting as null), with valid
// names sorted and unique and known kinds. Errors wrap ErrBadTree.
func DecodeTree(b []byte) (*Tree, error) {
	v, err := schema.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadTree, err)
	}
	m, ok := v.(*schema.Map)
	if !ok {
		return nil, fmt.Errorf("%w: not a %s record: %s", ErrBadTree, TreeSchema, clip(schema.String(v)))
	}
	t := &Tree{}
	var entries []schema.Value
	for _, f := range m.Entries() {
		switch f.Key {
		case "entries":
			if entries, ok = f.Value.([]schema.Value); !ok {
				return nil, fmt.Errorf("%w: entries is not a list", ErrBadTree)
			}
		case "annotations_hash":
			if t.Annotations, err = optHash("annotations_hash", f.Value); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%w: unknown field %s of %s", ErrBadTree, clip(schema.String(f.Key)), TreeSchema)
		}
	}
	if !m.Has("entries") {
		return nil, fmt.Errorf("%w: %s has no entries", ErrBadTree, TreeSchema)
	}
	t.Entries = make([]Entry, len(entries))
	for i, x := range entries {
		if err := decodeEntry(x, &t.Entries[i]); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrBadTree, i, err)
		}
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeEntry decodes a sys/WorkspaceEntry@2 value.
func decodeEntry(v schema.Value, e *Entry) error {
	m, ok := v.(*schema.Map)
	if !ok {
		return fmt.Errorf("not a %s record", EntrySchema)
	}
	seen := 0
	for _, f := range m.Entries() {
		var ok bool
		switch f.Key {
		case "name":
			e.Name, ok = f.Value.(string)
		case "kind":
			e.Kind, ok = f.Value.(string)
		case "size":
			e.Size, ok = f.Value.(uint64)
		case "mode":
			e.Mode, ok = f.Value.(uint64)
		case "hash":
			s, isText := f.Value.(string)
			if isText {
				r, err := cas.ParseRef(s)
				e.Hash, ok = r, err == nil
			}
		case "annotations_hash":
			var err error
			if e.Annotations, err = optHash("annotations_hash", f.Value); err != nil {
				return err
			}
			continue
		default:
			return fmt.Errorf("unknown field %s", clip(schema.String(f.Key)))
		}
		if !ok {
			return fmt.Errorf("field %s is %s, which does not fit %s", f.Key, clip(schema.String(f.Value)), EntrySchema)
		}
		seen++
	}
	if seen != 5 {
		return fmt.Errorf("%s needs name, kind, hash, size and mode", EntrySchema)
	}
	return nil
}

// optHash reads an option<hash> field.
func optHash(name string, v schema.Value) (cas.Ref, error) {
	if v == nil {
		return cas.Ref{}, nil
	}
	s, ok := v.(string)
	if !ok {
		return cas.Ref{}, fmt.Errorf("%w: %s is %s, not a hash", ErrBadTree, name, clip(schema.String(v)))
	}
	r, err := cas.ParseRef(s)
	if err != nil {
		return cas.Ref{}, fmt.Errorf("%w: %s: %v", ErrBadTree, name, err)
	}
	return r, nil
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// PutTree stores t as a node and returns its ref.
func PutTree(ctx context.Context, p cas.Putter, t *Tree) (cas.Ref, error) {
	if ts, ok := p.(treeSink); ok {
		return ts.putTree(ctx, t)
	}
	b, err := t.Encode()
	if err != nil {
		return cas.Ref{}, err
	}
	return p.Put(ctx, b)
}

// GetTree loads and checks the tree node stored under ref. A ref the store
// does not hold is an error wrapping cas.ErrNotFound; a node that is not a
// tree wraps ErrBadTree.
//
// The empty tree (EmptyRootRef) is known without reading the store.
func GetTree(ctx context.Context, g cas.Getter, ref cas.Ref) (*Tree, error) {
	if ref == EmptyRootRef {
		return &Tree{}, nil
	}
	b, err := g.Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", ref, err)
	}
	t, err := DecodeTree(b)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", ref, err)
	}
	return t, nil
}

// emptyTreeBytes is the canonical node of the empty tree, encoded on
// first use: at init it made the CBOR encoder of every start.
var emptyTreeBytes = sync.OnceValue(func() []byte {
	b, err := (&Tree{}).Encode()
	if err != nil {
		panic(err) // programmer error
	}
	return b
})

// EmptyRootRef is the ref of the empty tree: cas.Sum(emptyTreeBytes), written
// out so that starting the binary hashes nothing (TestEmptyRootRef checks it).
var EmptyRootRef = cas.MustParseRef("blake3:e111d18be6ad25045cc80ddb62cce1fc0dbe1cde31647fe09b01ffbea24689c1")

// EmptyRoot stores the empty tree and returns its ref (EmptyRootRef).
func EmptyRoot(ctx context.Context, p cas.Putter) (cas.Ref, error) {
	return p.Put(ctx, emptyTreeBytes())
}
