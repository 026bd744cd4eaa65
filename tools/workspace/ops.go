package workspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/demiurge-dev/demiurge/cas"
)

// rootEntry describes the root directory of a tree.
func rootEntry(root cas.Ref, t *Tree) Entry {
	return Entry{Kind: KindDir, Hash: root, Size: t.Size(), Mode: ModeDir, Annotations: t.Annotations}
}

// lookup walks from root to the entry at the clean path p. The root itself
// is an entry with an empty name.
func lookup(ctx context.Context, g cas.Getter, root cas.Ref, p string) (Entry, error) {
	t, err := getTree(ctx, g, root)
	if err != nil {
		return Entry{}, err
	}
	if p == "" {
		return rootEntry(root, t), nil
	}
	parts := splitPath(p)
	for i, name := range parts {
		idx, ok := t.find(name)
		if !ok {
			if i == len(parts)-1 {
				return Entry{}, ErrNotFound
			}
			return Entry{}, fmt.Errorf("%w (%s does not exist)", ErrNotFound, strings.Join(parts[:i+1], "/"))
		}
		e := t.Entries[idx]
		if i == len(parts)-1 {
			return e, nil
		}
		if e.Kind != KindDir {
			return Entry{}, fmt.Errorf("%w: %s is a file", ErrNotDir, strings.Join(parts[:i+1], "/"))
		}
		if t, err = getTree(ctx, g, e.Hash); err != nil {
			return Entry{}, err
		}
	}
	panic("unreachable")
}

// ReadRef returns the entry at path p of the tree at root. The root path
// ("" or ".") gives the root directory, with an empty name. A missing path
// is an error wrapping ErrNotFound.
func ReadRef(ctx context.Context, g cas.Getter, root cas.Ref, p string) (Entry, error) {
	c, err := CleanPath(p)
	if err != nil {
		return Entry{}, &PathError{Op: "read_ref", Path: p, Err: err}
	}
	e, err := lookup(ctx, g, root, c)
	if err != nil {
		return Entry{}, pathErr("read_ref", c, err)
	}
	return e, nil
}

// Range is a byte range [Start, End) of a file.
type Range struct {
	Start, End uint64
}

// ReadBytes returns the contents of the file at path p, or of the byte
// range r of it (nil: all of it), with the file's entry. An End past the
// end of the file reads to the end; a Start past the end, or after End, is
// an error wrapping ErrBadRange. A directory is an error wrapping ErrIsDir.
// The caller may keep and modify the returned bytes.
func ReadBytes(ctx context.Context, g cas.Getter, root cas.Ref, p string, r *Range) ([]byte, Entry, error) {
	const op = "read"
	c, err := CleanPath(p)
	if err != nil {
		return nil, Entry{}, &PathError{Op: op, Path: p, Err: err}
	}
	e, err := lookup(ctx, g, root, c)
	if err != nil {
		return nil, Entry{}, pathErr(op, c, err)
	}
	if e.Kind == KindDir {
		return nil, e, &PathError{Op: op, Path: c, Err: ErrIsDir}
	}
	data, err := g.Get(ctx, e.Hash)
	if err != nil {
		return nil, e, &PathError{Op: op, Path: c, Err: fmt.Errorf("file contents %s: %w", e.Hash, err)}
	}
	if uint64(len(data)) != e.Size {
		return nil, e, &PathError{Op: op, Path: c, Err: fmt.Errorf("%w: the entry says %d bytes, its blob holds %d", ErrBadTree, e.Size, len(data))}
	}
	if r != nil {
		if r.Start > r.End || r.Start > e.Size {
			return nil, e, &PathError{Op: op, Path: c, Err: fmt.Errorf("%w: [%d, %d) of a file of %d bytes", ErrBadRange, r.Start, r.End, e.Size)}
		}
		data = data[r.Start:min(r.End, e.Size)]
	}
	return data, e, nil
}

// update rewrites the tree at root along the clean path p: fn gets the
// entry at p (nil if there is none) and returns its replacement (nil
// removes it; the name is set by update). Missing parent directories are
// created when create is set, else they are an error wrapping ErrNotFound.
// It returns the new root.
func update(ctx context.Context, s Store, root cas.Ref, p string, create bool, fn func(old *Entry) (*Entry, error)) (cas.Ref, error) {
	t, err := getTree(ctx, s, root)
	if err != nil {
		return cas.Ref{}, err
	}
	nt, err := updateIn(ctx, s, t, splitPath(p), 0, create, fn)
	if err != nil {
		return cas.Ref{}, err
	}
	return PutTree(ctx, s, nt)
}

func updateIn(ctx context.Context, s Store, t *Tree, parts []string, i int, create bool, fn func(old *Entry) (*Entry, error)) (*Tree, error) {
	name := parts[i]
	idx, found := t.find(name)
	t = t.clone()
	if i == len(parts)-1 {
		var old *Entry
		if found {
			o := t.Entries[idx]
			old = &o
		}
		ne, err := fn(old)
		if err != nil {
			return nil, err
		}
		switch {
		case ne == nil && found:
			t.remove(idx)
		case ne != nil:
			ne.Name = name
			t.set(*ne)
		}
		return t, nil
	}
	var (
		child *Tree
		dir   Entry
		err   error
	)
	if found {
		dir = t.Entries[idx]
		if dir.Kind != KindDir {
			return nil, fmt.Errorf("%w: %s is a file", ErrNotDir, strings.Join(parts[:i+1], "/"))
		}
		if child, err = getTree(ctx, s, dir.Hash); err != nil {
			return nil, err
		}
	} else {
		if !create {
			return nil, fmt.Errorf("%w (%s does not exist)", ErrNotFound, strings.Join(parts[:i+1], "/"))
		}
		child, dir = &Tree{}, Entry{Name: name, Kind: KindDir, Mode: ModeDir}
	}
	if child, err = updateIn(ctx, s, child, parts, i+1, create, fn); err != nil {
		return nil, err
	}
	ref, err := PutTree(ctx, s, child)
	if err != nil {
		return nil, err
	}
	dir.Hash, dir.Size = ref, child.Size()
	t.set(dir)
	return t, nil
}

// checkMode checks a file mode; 0 means "keep the old one, else ModeFile".
func checkMode(mode uint64) error {
	if mode > MaxMode {
		return fmt.Errorf("mode %#o is not a permission mode (at most %#o)", mode, MaxMode)
	}
	return nil
}

// WriteBytes writes data as the file at path p, creating missing parent
// directories, and returns the new root and the ref of the file's blob.
// mode 0 keeps the mode of the file it replaces (ModeFile for a new file).
// A directory at p, or a file where a parent directory should be, is an
// error (ErrIsDir, ErrNotDir); so is the root path (ErrInvalidPath).
func WriteBytes(ctx context.Context, s Store, root cas.Ref, p string, data []byte, mode uint64) (newRoot, blob cas.Ref, err error) {
	const op = "write"
	c, err := CleanPath(p)
	if err != nil {
		return cas.Ref{}, cas.Ref{}, &PathError{Op: op, Path: p, Err: err}
	}
	if c == "" {
		return cas.Ref{}, cas.Ref{}, &PathError{Op: op, Path: c, Err: fmt.Errorf("%w: the root is a directory; name a file", ErrInvalidPath)}
	}
	if err := checkMode(mode); err != nil {
		return cas.Ref{}, cas.Ref{}, &PathError{Op: op, Path: c, Err: err}
	}
	blob, err = s.Put(ctx, data)
	if err != nil {
		return cas.Ref{}, cas.Ref{}, &PathError{Op: op, Path: c, Err: err}
	}
	newRoot, err = update(ctx, s, root, c, true, func(old *Entry) (*Entry, error) {
		e := Entry{Kind: KindFile, Hash: blob, Size: uint64(len(data)), Mode: mode}
		if old != nil {
			if old.Kind == KindDir {
				return nil, ErrIsDir
			}
			e.Annotations = old.Annotations
			if mode == 0 {
				e.Mode = old.Mode
			}
		}
		if e.Mode == 0 {
			e.Mode = ModeFile
		}
		return &e, nil
	})
	if err != nil {
		return cas.Ref{}, cas.Ref{}, pathErr(op, c, err)
	}
	return newRoot, blob, nil
}

// Remove removes the entry at path p and returns the new root and the entry
// removed. A directory that holds entries is removed only when recursive is
// set (else ErrNotEmpty). A missing path is an error wrapping ErrNotFound;
// the root path is an error wrapping ErrInvalidPath.
func Remove(ctx context.Context, s Store, root cas.Ref, p string, recursive bool) (cas.Ref, Entry, error) {
	const op = "remove"
	c, err := CleanPath(p)
	if err != nil {
		return cas.Ref{}, Entry{}, &PathError{Op: op, Path: p, Err: err}
	}
	if c == "" {
		return cas.Ref{}, Entry{}, &PathError{Op: op, Path: c, Err: fmt.Errorf("%w: the root cannot be removed; remove its entries", ErrInvalidPath)}
	}
	var removed Entry
	newRoot, err := update(ctx, s, root, c, false, func(old *Entry) (*Entry, error) {
		if old == nil {
			return nil, ErrNotFound
		}
		if old.Kind == KindDir && !recursive {
			t, err := getTree(ctx, s, old.Hash)
			if err != nil {
				return nil, err
			}
			if len(t.Entries) > 0 {
				return nil, fmt.Errorf("%w: it holds %d entries", ErrNotEmpty, len(t.Entries))
			}
		}
		removed = *old
		return nil, nil
	})
	if err != nil {
		return cas.Ref{}, Entry{}, pathErr(op, c, err)
	}
	return newRoot, removed, nil
}

// List limits.
const (
	// DefaultListLimit is the page size of a List without a Limit.
	DefaultListLimit = 1000
	// MaxListLimit bounds ListOptions.Limit.
	MaxListLimit = 10000
)

// ListOptions select what List returns.
type ListOptions struct {
	// Path is the directory to list ("" for the root). Listing a file
	// returns the file itself.
	Path string
	// Recursive lists the whole subtree, not only the directory's entries.
	Recursive bool
	// Cursor continues a listing after the entry with this path (a
	// previous page's NextCursor).
	Cursor string
	// Limit bounds the entries of one page: 0 means DefaultListLimit;
	// more than MaxListLimit is MaxListLimit.
	Limit int
}

// ListEntry is one entry of a listing.
type ListEntry struct {
	Path string // the full workspace path
	Kind string
	Hash cas.Ref
	Size uint64
	Mode uint64
}

// ListResult is one page of a listing.
type ListResult struct {
	// Entries are in walk order: a directory before its entries, entries
	// by name (see ListOptions.Recursive).
	Entries []ListEntry
	// NextCursor is the cursor of the next page, empty on the last page.
	NextCursor string
}

var errStop = errors.New("stop")

// List lists the directory at opts.Path: its entries, or with Recursive
// every entry under it, in walk order, at most opts.Limit of them. A
// missing path is an error wrapping ErrNotFound.
func List(ctx context.Context, g cas.Getter, root cas.Ref, opts ListOptions) (ListResult, error) {
	const op = "list"
	c, err := CleanPath(opts.Path)
	if err != nil {
		return ListResult{}, &PathError{Op: op, Path: opts.Path, Err: err}
	}
	cursor := ""
	if opts.Cursor != "" {
		if cursor, err = CleanPath(opts.Cursor); err != nil {
			return ListResult{}, &PathError{Op: op, Path: c, Err: fmt.Errorf("cursor: %w", err)}
		}
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	e, err := lookup(ctx, g, root, c)
	if err != nil {
		return ListResult{}, pathErr(op, c, err)
	}
	res := ListResult{Entries: []ListEntry{}}
	if e.Kind == KindFile {
		if cursor == "" || comparePaths(c, cursor) > 0 {
			res.Entries = append(res.Entries, ListEntry{Path: c, Kind: e.Kind, Hash: e.Hash, Size: e.Size, Mode: e.Mode})
		}
		return res, nil
	}
	var walk func(ref cas.Ref, dir string) error
	walk = func(ref cas.Ref, dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, err := getTree(ctx, g, ref)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			p := joinPath(dir, e.Name)
			if len(p) > MaxPathBytes {
				return fmt.Errorf("%w: %s... is longer than %d bytes", ErrBadTree, p[:64], MaxPathBytes)
			}
			if cursor != "" && comparePaths(p, cursor) <= 0 {
				if opts.Recursive && e.Kind == KindDir && (p == cursor || isAncestor(p, cursor)) {
					if err := walk(e.Hash, p); err != nil {
						return err
					}
				}
				continue
			}
			if len(res.Entries) == limit {
				res.NextCursor = res.Entries[limit-1].Path
				return errStop
			}
			res.Entries = append(res.Entries, ListEntry{Path: p, Kind: e.Kind, Hash: e.Hash, Size: e.Size, Mode: e.Mode})
			if opts.Recursive && e.Kind == KindDir {
				if err := walk(e.Hash, p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(e.Hash, c); err != nil && err != errStop {
		return ListResult{}, pathErr(op, c, err)
	}
	return res, nil
}

// Change kinds of a Diff.
const (
	ChangeAdded   = "added"
	ChangeRemoved = "removed"
	ChangeChanged = "changed"
)

// Change is one difference between two trees.
type Change struct {
	Path   string
	Change string // ChangeAdded, ChangeRemoved or ChangeChanged
	// Kind is the entry's kind: the new one for added and changed paths,
	// the old one for removed paths.
	Kind string
	// OldHash and NewHash are the entry's hash in each tree; the zero Ref
	// where it is absent.
	OldHash, NewHash cas.Ref
}

// Diff returns the differences from the tree at a to the tree at b, under
// prefix ("" for all), in walk order. Every entry that exists in only one
// tree is added or removed — a directory and each entry under it. A path
// that holds a file in both with different contents or mode, or a file in
// one and a directory in the other, is changed. Directories in both are not
// reported themselves: their differing entries are. A prefix that exists in
// neither tree gives no changes.
func Diff(ctx context.Context, g cas.Getter, a, b cas.Ref, prefix string) ([]Change, error) {
	const op = "diff"
	c, err := CleanPath(prefix)
	if err != nil {
		return nil, &PathError{Op: op, Path: prefix, Err: err}
	}
	at := func(root cas.Ref) (*Entry, error) {
		e, err := lookup(ctx, g, root, c)
		switch {
		case err == nil:
			return &e, nil
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrNotDir):
			return nil, nil
		}
		return nil, err
	}
	ea, err := at(a)
	if err != nil {
		return nil, pathErr(op, c, err)
	}
	eb, err := at(b)
	if err != nil {
		return nil, pathErr(op, c, err)
	}
	d := differ{ctx: ctx, g: g, out: []Change{}}
	if err := d.entry(c, ea, eb); err != nil {
		return nil, pathErr(op, c, err)
	}
	return d.out, nil
}

type differ struct {
	ctx context.Context
	g   cas.Getter
	out []Change
}

func (d *differ) entry(p string, a, b *Entry) error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		d.out = append(d.out, Change{Path: p, Change: ChangeAdded, Kind: b.Kind, NewHash: b.Hash})
		return d.all(p, b, ChangeAdded)
	case b == nil:
		d.out = append(d.out, Change{Path: p, Change: ChangeRemoved, Kind: a.Kind, OldHash: a.Hash})
		return d.all(p, a, ChangeRemoved)
	case a.Kind == KindDir && b.Kind == KindDir:
		if a.Hash == b.Hash {
			return nil
		}
		return d.dirs(p, a.Hash, b.Hash)
	case a.Kind == KindFile && b.Kind == KindFile:
		if a.Hash != b.Hash || a.Mode != b.Mode {
			d.out = append(d.out, Change{Path: p, Change: ChangeChanged, Kind: KindFile, OldHash: a.Hash, NewHash: b.Hash})
		}
		return nil
	}
	// A file became a directory, or a directory a file.
	d.out = append(d.out, Change{Path: p, Change: ChangeChanged, Kind: b.Kind, OldHash: a.Hash, NewHash: b.Hash})
	if a.Kind == KindDir {
		return d.all(p, a, ChangeRemoved)
	}
	return d.all(p, b, ChangeAdded)
}

// all reports every entry under the directory e as added or removed.
func (d *differ) all(p string, e *Entry, change string) error {
	if e.Kind != KindDir {
		return nil
	}
	t, err := getTree(d.ctx, d.g, e.Hash)
	if err != nil {
		return err
	}
	for i := range t.Entries {
		c := &t.Entries[i]
		cp := joinPath(p, c.Name)
		ch := Change{Path: cp, Change: change, Kind: c.Kind}
		if change == ChangeAdded {
			ch.NewHash = c.Hash
		} else {
			ch.OldHash = c.Hash
		}
		d.out = append(d.out, ch)
		if err := d.all(cp, c, change); err != nil {
			return err
		}
	}
	return nil
}

// dirs merges the entries of two directories.
func (d *differ) dirs(p string, a, b cas.Ref) error {
	ta, err := getTree(d.ctx, d.g, a)
	if err != nil {
		return err
	}
	tb, err := getTree(d.ctx, d.g, b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ta.Entries) || j < len(tb.Entries) {
		var ea, eb *Entry
		switch {
		case j == len(tb.Entries) || i < len(ta.Entries) && ta.Entries[i].Name < tb.Entries[j].Name:
			ea = &ta.Entries[i]
			i++
		case i == len(ta.Entries) || tb.Entries[j].Name < ta.Entries[i].Name:
			eb = &tb.Entries[j]
			j++
		default:
			ea, eb = &ta.Entries[i], &tb.Entries[j]
			i++
			j++
		}
		name := ""
		if ea != nil {
			name = ea.Name
		} else {
			name = eb.Name
		}
		if err := d.entry(joinPath(p, name), ea, eb); err != nil {
			return err
		}
	}
	return nil
}

// Apply replays on the tree base the changes that turn the tree from into
// the tree to, and returns the new root: a three-way merge in which every
// path the change touched takes to's entry (or goes, if to has none) and
// every other path keeps base's. It is how a writer that worked on an old
// version commits on a newer one: the other writer's changes to other
// paths survive, and on the same path the later writer wins. A directory
// that from and to both hold is merged entry by entry; one that only to
// holds is set whole.
func Apply(ctx context.Context, s Store, base, from, to cas.Ref) (cas.Ref, error) {
	if from == to {
		return base, nil
	}
	if base == from {
		return to, nil
	}
	changes, err := Diff(ctx, s, from, to, "")
	if err != nil {
		return cas.Ref{}, err
	}
	root := base
	done := "" // a path set whole: skip the changes below it
	for _, ch := range changes {
		if done != "" && isAncestor(done, ch.Path) {
			continue
		}
		done = ""
		if ch.Change == ChangeRemoved {
			nr, err := update(ctx, s, root, ch.Path, false, func(*Entry) (*Entry, error) { return nil, nil })
			switch {
			case errors.Is(err, ErrNotFound), errors.Is(err, ErrNotDir):
				// base no longer has it either
			case err != nil:
				return cas.Ref{}, pathErr("apply", ch.Path, err)
			default:
				root = nr
			}
			done = ch.Path // what was under it went with it
			continue
		}
		e, err := lookup(ctx, s, to, ch.Path)
		if err != nil {
			return cas.Ref{}, pathErr("apply", ch.Path, err)
		}
		merged := false
		root, err = update(ctx, s, root, ch.Path, true, func(old *Entry) (*Entry, error) {
			if old != nil && old.Kind == KindDir && e.Kind == KindDir {
				merged = true // both made it: merge entry by entry below
				return old, nil
			}
			ne := e
			return &ne, nil
		})
		if errors.Is(err, ErrNotDir) {
			// base holds a file where to needs a directory: to wins.
			parent := ch.Path
			for parent != "" {
				i := strings.LastIndexByte(parent, '/')
				if i < 0 {
					parent = ""
					break
				}
				parent = parent[:i]
				if pe, lerr := lookup(ctx, s, root, parent); lerr == nil && pe.Kind == KindFile {
					root, err = update(ctx, s, root, parent, false, func(*Entry) (*Entry, error) { return nil, nil })
					if err == nil {
						root, err = update(ctx, s, root, ch.Path, true, func(*Entry) (*Entry, error) { ne := e; return &ne, nil })
					}
					break
				}
			}
		}
		if err != nil {
			return cas.Ref{}, pathErr("apply", ch.Path, err)
		}
		if e.Kind == KindDir && !merged {
			done = ch.Path
		}
	}
	return root, nil
}

// PutEntries stores a tree node holding entries (in any order; names must
// be unique) and returns its ref and the total size of its files.
func PutEntries(ctx context.Context, p cas.Putter, entries []Entry) (cas.Ref, uint64, error) {
	t := &Tree{Entries: slices.Clone(entries)}
	slices.SortFunc(t.Entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	ref, err := PutTree(ctx, p, t)
	if err != nil {
		return cas.Ref{}, 0, err
	}
	return ref, t.Size(), nil
}
