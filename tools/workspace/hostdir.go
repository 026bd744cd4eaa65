package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/readall"
)

// importer reads a host directory into tree nodes.
type importer struct {
	ctx       context.Context
	put       cas.Putter
	root      string      // the real path of the directory imported
	store     os.FileInfo // the store's directory, never imported; nil if none
	storeReal string      // its real path
	skip      func(p, reason string)
	stats     Stats
}

// ImportDir reads the host directory dir into a tree in p and returns its
// root: files with their contents and executable bit, directories (empty
// ones included). A symbolic link to a file inside dir is read as that
// file; one that points outside dir is an error, and nothing is returned.
// What a tree cannot hold (links to directories, sockets, devices, names
// a workspace path cannot have) and the directory exclude, if it lies
// inside dir (the store itself), are left out, and skip, if not nil, is
// told each path left out and why.
func ImportDir(ctx context.Context, p cas.Putter, dir, exclude string, skip func(path, reason string)) (cas.Ref, Stats, error) {
	if skip == nil {
		skip = func(string, string) {}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return cas.Ref{}, Stats{}, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return cas.Ref{}, Stats{}, err
	}
	// Listing a FIFO would wait for a writer: only a directory is read.
	if st, err := os.Stat(real); err != nil {
		return cas.Ref{}, Stats{}, err
	} else if !st.IsDir() {
		return cas.Ref{}, Stats{}, fmt.Errorf("%s is not a directory (%s): import reads a directory, whose files become the workspace's", dir, readall.Kind(st.Mode()))
	}
	im := &importer{ctx: ctx, put: p, root: real, skip: skip}
	if exclude != "" {
		im.store, _ = os.Stat(exclude)
		im.storeReal, _ = filepath.EvalSymlinks(exclude)
	}
	t, err := im.dir(real, "")
	if err != nil {
		return cas.Ref{}, Stats{}, err
	}
	ref, err := PutTree(ctx, p, t)
	return ref, im.stats, err
}

func (im *importer) dir(host, rel string) (*Tree, error) {
	if err := im.ctx.Err(); err != nil {
		return nil, err
	}
	des, err := os.ReadDir(host)
	if err != nil {
		return nil, err
	}
	t := &Tree{}
	for _, de := range des { // sorted by name, bytewise: the order of a tree
		name := de.Name()
		hp := filepath.Join(host, name)
		wp := name
		if rel != "" {
			wp = rel + "/" + name
		}
		if c, err := CleanPath(wp); err != nil || c != wp {
			why := "a workspace path cannot hold this name"
			if err != nil {
				why = strings.TrimPrefix(err.Error(), "workspace: invalid path: ")
			}
			im.skip(filepath.Join(rel, name), why)
			continue
		}
		info, err := os.Lstat(hp)
		if err != nil {
			return nil, err
		}
		if im.store != nil && os.SameFile(info, im.store) {
			im.skip(wp, "it is the demiurge store")
			continue
		}
		var e *Entry
		switch mode := info.Mode(); {
		case mode.IsDir():
			sub, err := im.dir(hp, wp)
			if err != nil {
				return nil, err
			}
			ref, err := PutTree(im.ctx, im.put, sub)
			if err != nil {
				return nil, err
			}
			e = &Entry{Kind: KindDir, Hash: ref, Size: sub.Size(), Mode: ModeDir}
			im.stats.Dirs++
		case mode.IsRegular():
			if e, err = im.file(hp, wp, info); err != nil {
				return nil, err
			}
		case mode&fs.ModeSymlink != 0:
			if e, err = im.link(hp, wp); err != nil {
				return nil, err
			}
		default:
			im.skip(wp, fmt.Sprintf("not a regular file, directory or link (%s)", mode.Type()))
		}
		if e != nil {
			e.Name = name
			t.Entries = append(t.Entries, *e)
		}
	}
	return t, nil
}

func (im *importer) file(hp, wp string, info os.FileInfo) (*Entry, error) {
	// Checked again as it is opened: a file swapped for a FIFO since the
	// directory was listed is refused, not waited on.
	data, err := readall.File(hp, "a file to import", readall.NoLimit)
	if err != nil {
		return nil, err
	}
	ref, err := im.put.Put(im.ctx, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wp, err)
	}
	mode := ModeFile
	if info.Mode().Perm()&0o111 != 0 {
		mode = ModeExec
	}
	im.stats.Files++
	im.stats.Bytes += int64(len(data))
	return &Entry{Kind: KindFile, Hash: ref, Size: uint64(len(data)), Mode: mode}, nil
}

// link imports a symbolic link: the file it points to inside the
// directory, nothing (reported) for other targets, an error for a target
// outside.
func (im *importer) link(hp, wp string) (*Entry, error) {
	dest, _ := os.Readlink(hp)
	target, err := filepath.EvalSymlinks(hp)
	if err != nil {
		im.skip(wp, fmt.Sprintf("a symbolic link to %s that does not resolve", dest))
		return nil, nil
	}
	rel, err := filepath.Rel(im.root, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("%s is a symbolic link to %s, outside %s: remove the link, or copy what it points to into the directory", wp, target, im.root)
	}
	info, err := os.Stat(target)
	if err != nil {
		return nil, err
	}
	switch {
	case info.IsDir():
		im.skip(wp, fmt.Sprintf("a symbolic link to the directory %s (links to directories are not followed)", rel))
		return nil, nil
	case !info.Mode().IsRegular():
		im.skip(wp, fmt.Sprintf("a symbolic link to %s, which is not a regular file", rel))
		return nil, nil
	}
	if im.storeReal != "" {
		if r, err := filepath.Rel(im.storeReal, target); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			im.skip(wp, "a symbolic link into the demiurge store")
			return nil, nil
		}
	}
	return im.file(target, wp, info)
}

// Stats counts what ExportTree or ImportDir wrote.
type Stats struct {
	Files, Dirs int
	Bytes       int64
}

// ExportTree writes the tree at root into the host directory dir,
// creating it if need be. All writes go through an os.Root, so none can
// leave dir, whatever symbolic links dir holds. Conflicts are checked
// before anything is written: a path of the tree that exists in dir as
// something else, or as a file when overwrite is false, is an
// *ExportConflictError and nothing is written.
func ExportTree(ctx context.Context, g cas.Getter, root cas.Ref, dir string, overwrite bool) (Stats, error) {
	var entries []ListEntry
	cursor := ""
	for {
		res, err := List(ctx, g, root, ListOptions{Recursive: true, Cursor: cursor, Limit: MaxListLimit})
		if err != nil {
			return Stats{}, err
		}
		entries = append(entries, res.Entries...)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Stats{}, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return Stats{}, err
	}
	defer r.Close()
	var conflicts []string
	for _, e := range entries {
		fi, err := r.Lstat(e.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			conflicts = append(conflicts, fmt.Sprintf("%s (%v)", e.Path, err))
		case fi.Mode()&fs.ModeSymlink != 0:
			conflicts = append(conflicts, e.Path+" is a symbolic link")
		case e.Kind == KindDir && !fi.IsDir():
			conflicts = append(conflicts, e.Path+" exists and is not a directory")
		case e.Kind == KindFile && fi.IsDir():
			conflicts = append(conflicts, e.Path+" is a directory")
		case e.Kind == KindFile && !fi.Mode().IsRegular():
			conflicts = append(conflicts, e.Path+" is not a regular file")
		case e.Kind == KindFile && !overwrite:
			conflicts = append(conflicts, e.Path+" exists")
		}
	}
	if len(conflicts) > 0 {
		return Stats{}, &ExportConflictError{Dir: dir, Paths: conflicts}
	}
	var st Stats
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if e.Kind == KindDir {
			if err := r.MkdirAll(e.Path, 0o755); err != nil {
				return st, err
			}
			st.Dirs++
			continue
		}
		data, err := g.Get(ctx, e.Hash)
		if err != nil {
			return st, fmt.Errorf("%s: %w", e.Path, err)
		}
		perm := fs.FileMode(e.Mode) & fs.ModePerm
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if !overwrite {
			flags |= os.O_EXCL
		}
		out, err := r.OpenFile(e.Path, flags, perm)
		if err != nil {
			return st, err
		}
		_, werr := out.Write(data)
		cerr := out.Close()
		if err := errors.Join(werr, cerr); err != nil {
			return st, fmt.Errorf("write %s: %w", e.Path, err)
		}
		if err := r.Chmod(e.Path, perm); err != nil {
			return st, err
		}
		st.Files++
		st.Bytes += int64(len(data))
	}
	return st, nil
}

// ExportConflictError is the error of an export that would overwrite or
// collide with what the directory holds: nothing was written.
type ExportConflictError struct {
	Dir string
	// Paths are the paths in conflict, each with why.
	Paths []string
}

func (e *ExportConflictError) Error() string {
	n, shown, more := len(e.Paths), e.Paths, ""
	if n > 10 {
		shown, more = e.Paths[:10], fmt.Sprintf(", and %d more", n-10)
	}
	what := "1 path"
	if n != 1 {
		what = fmt.Sprintf("%d paths", n)
	}
	return fmt.Sprintf("nothing written: %s in %s: %s%s", what, e.Dir, strings.Join(shown, "; "), more)
}
