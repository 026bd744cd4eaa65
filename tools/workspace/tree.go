package workspace

import (
	"context"
	"fmt"
	"sort"

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
// hashed as. It fails if t breaks the invariants of a tree node.
func (t *Tree) Encode() ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return schema.Encode(t.Value())
}

// DecodeTree decodes and checks a tree node: it must fit
// sys/WorkspaceTree@2, with valid names sorted and unique and known kinds.
// Errors wrap ErrBadTree.
func DecodeTree(b []byte) (*Tree, error) {
	v, err := schema.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadTree, err)
	}
	v, err = schema.Normalize(builtinTypes{}, &schema.Type{Kind: schema.KindRef, Ref: TreeSchema}, v)
	if err != nil {
		return nil, fmt.Errorf("%w: not a %s: %v", ErrBadTree, TreeSchema, err)
	}
	m := v.(*schema.Map)
	t := &Tree{}
	if t.Annotations, err = refField(m, "annotations_hash"); err != nil {
		return nil, err
	}
	ev, _ := m.Get("entries")
	list, _ := ev.([]schema.Value)
	t.Entries = make([]Entry, len(list))
	for i, x := range list {
		em := x.(*schema.Map)
		e := &t.Entries[i]
		nv, _ := em.Get("name")
		kv, _ := em.Get("kind")
		sv, _ := em.Get("size")
		mv, _ := em.Get("mode")
		e.Name, _ = nv.(string)
		e.Kind, _ = kv.(string)
		e.Size, _ = schema.AsUint64(sv)
		e.Mode, _ = schema.AsUint64(mv)
		if e.Hash, err = refField(em, "hash"); err != nil {
			return nil, err
		}
		if e.Annotations, err = refField(em, "annotations_hash"); err != nil {
			return nil, err
		}
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// refField reads an optional hash field of a normalized record.
func refField(m *schema.Map, name string) (cas.Ref, error) {
	v, _ := m.Get(name)
	s, ok := v.(string)
	if !ok {
		return cas.Ref{}, nil
	}
	r, err := cas.ParseRef(s)
	if err != nil {
		return cas.Ref{}, fmt.Errorf("%w: %s: %v", ErrBadTree, name, err)
	}
	return r, nil
}

// builtinTypes resolves the built-in schemas (sys/*).
type builtinTypes struct{}

func (builtinTypes) SchemaType(name string) (*schema.Type, bool) {
	d, ok := schema.Builtin(schema.KindDefSchema, name)
	if !ok {
		return nil, false
	}
	ds, ok := d.(*schema.DefSchema)
	if !ok {
		return nil, false
	}
	return ds.Type, true
}

// PutTree stores t as a node and returns its ref.
func PutTree(ctx context.Context, p cas.Putter, t *Tree) (cas.Ref, error) {
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

// emptyTreeBytes is the canonical node of the empty tree.
var emptyTreeBytes = func() []byte {
	b, err := (&Tree{}).Encode()
	if err != nil {
		panic(err) // programmer error
	}
	return b
}()

// EmptyRootRef is the ref of the empty tree.
var EmptyRootRef = cas.Sum(emptyTreeBytes)

// EmptyRoot stores the empty tree and returns its ref (EmptyRootRef).
func EmptyRoot(ctx context.Context, p cas.Putter) (cas.Ref, error) {
	return p.Put(ctx, emptyTreeBytes)
}
