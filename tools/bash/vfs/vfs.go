// Package vfs is the file system of the bash tool's sandbox: a tree
// held in memory in which nothing of the host exists.
//
// Its layout is fixed: / holds dev, tmp and workspace, and nothing may be
// added beside them. /workspace is an overlay on a read-only [Source] (a
// workspace version): reads see the source until a path is written, and
// writes, removals and renames change only the overlay, which [FS.Export]
// hands back when the script ends. /tmp is a scratch area that starts
// empty and is dropped with the FS. /dev holds null, zero, stdin, stdout
// and stderr; the shell connects the last three to a command's streams.
//
// Paths are slash separated and cleaned lexically ([Abs]): ".." stops at
// the root, so no path leaves the tree, and there are no symbolic links.
// Every operation on a path under /workspace is first shown to the
// [Checker] (the workspace cap of a world), and every write counts against
// the [Limits].
//
// Errors are *fs.PathError values whose Err reads like the C library's
// (fs.ErrNotExist prints "No such file or directory"), so that utilities
// can print "cat: x: No such file or directory" as GNU's do. An FS is safe
// for concurrent use: the stages of a pipeline share it.
package vfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Mount points of the fixed layout.
const (
	WorkspaceDir = "/workspace"
	TmpDir       = "/tmp"
	DevDir       = "/dev"
)

// Errors. They wrap the io/fs sentinels where one fits, so errors.Is(err,
// fs.ErrNotExist) works, and their text is the C library's message.
var (
	ErrNotExist = &sysError{"No such file or directory", fs.ErrNotExist}
	ErrExist    = &sysError{"File exists", fs.ErrExist}
	ErrNotDir   = &sysError{"Not a directory", nil}
	ErrIsDir    = &sysError{"Is a directory", nil}
	ErrNotEmpty = &sysError{"Directory not empty", nil}
	ErrReadOnly = &sysError{"Read-only file system", fs.ErrPermission}
	ErrInvalid  = &sysError{"Invalid argument", fs.ErrInvalid}
	ErrBusy     = &sysError{"Device or resource busy", fs.ErrPermission}
	ErrClosed   = &sysError{"Bad file descriptor", fs.ErrClosed}
)

// sysError is an error with the C library's wording that also matches an
// io/fs sentinel.
type sysError struct {
	msg  string
	kind error
}

func (e *sysError) Error() string { return e.msg }

func (e *sysError) Is(target error) bool { return e.kind != nil && target == e.kind }

// LimitError is returned (inside a *fs.PathError) by a write that would
// pass one of the Limits.
type LimitError struct {
	What  string // "file size", "bytes written", "files created"
	Limit int64
}

func (e *LimitError) Error() string {
	switch e.What {
	case "file size":
		return fmt.Sprintf("File too large (a file may hold at most %d bytes)", e.Limit)
	case "files created":
		return fmt.Sprintf("Too many files (a script may create at most %d files and directories)", e.Limit)
	}
	return fmt.Sprintf("No space left on device (a script may write at most %d bytes)", e.Limit)
}

// DeniedError is returned (inside a *fs.PathError) for an operation the
// Checker refused; it matches fs.ErrPermission.
type DeniedError struct {
	Op     Op
	Reason string
}

func (e *DeniedError) Error() string { return "Permission denied: " + e.Reason }

// Is reports whether target is fs.ErrPermission.
func (e *DeniedError) Is(target error) bool { return target == fs.ErrPermission }

// Op is the kind of a workspace operation, as a workspace cap names it
// (the workspace tools' names without "workspace_").
type Op string

// Operations shown to the Checker.
const (
	OpRead   Op = "read"   // read a file, or look at an entry (stat)
	OpList   Op = "list"   // list a directory
	OpWrite  Op = "write"  // create or change a file or directory
	OpRemove Op = "remove" // remove an entry (the source of a rename, too)
)

// Checker decides whether an operation on a workspace path may run: p is
// relative to the workspace root ("" is the root itself). A non-nil error
// refuses it; its text is the reason the script sees. A Checker may be
// called concurrently.
type Checker func(op Op, p string) error

// Handle identifies an entry of a Source: a file's content, or a whole
// directory subtree. The FS never looks inside it.
type Handle any

// SourceEntry is one entry of a Source directory.
type SourceEntry struct {
	Name   string
	Dir    bool
	Size   int64       // a file's length
	Mode   fs.FileMode // permission bits
	Handle Handle
}

// Source is the read-only tree /workspace starts from. Its methods are
// called with the FS locked, at most once per entry and FS.
type Source interface {
	// ReadDir returns the entries of directory h, in any order.
	ReadDir(ctx context.Context, h Handle) ([]SourceEntry, error)
	// ReadFile returns the content of file h. The FS keeps the slice and
	// never changes it.
	ReadFile(ctx context.Context, h Handle) ([]byte, error)
}

// Limits bound what a script may write. Zero fields take the defaults of
// DefaultLimits.
type Limits struct {
	// MaxFileBytes bounds one file's size.
	MaxFileBytes int64
	// MaxWriteBytes bounds the bytes written by the whole script (every
	// write counts, also to /tmp and by cp).
	MaxWriteBytes int64
	// MaxFiles bounds the files and directories the script creates.
	MaxFiles int64
}

// DefaultLimits returns the limits of an FS whose Options set none.
func DefaultLimits() Limits {
	return Limits{MaxFileBytes: 16 << 20, MaxWriteBytes: 64 << 20, MaxFiles: 10_000}
}

// Options configure an FS. The zero value is an empty workspace with the
// default limits, no checker and time.Now as its clock.
type Options struct {
	// Source and Root are the tree /workspace starts from (nil Source:
	// an empty workspace).
	Source Source
	Root   Handle
	// Check, if set, decides every operation on a workspace path.
	Check Checker
	// Limits bound the script's writes.
	Limits Limits
	// Clock stamps the files the script changes. Stamps only increase:
	// a clock that stands still (a world's logical time) still orders
	// the writes of a script.
	Clock func() time.Time
	// SourceTime is the modification time of the source's entries (the
	// zero time: the clock's time when the FS is made, less a second).
	SourceTime time.Time
}

// node is a file or directory.
type node struct {
	dir   bool
	dev   device
	fixed bool // part of the layout: not removed, renamed, or added to (for / and /dev)
	mode  fs.FileMode
	mtime time.Time
	// h is the source entry the node still equals: a file's content, or
	// a directory's whole subtree; nil once it changed or for new nodes.
	h    Handle
	size int64 // a file's length
	// data is a file's content once loaded (always, for files without h).
	// It is never changed in place: readers keep the slice they got.
	data   []byte
	loaded bool
	// owned says the spare capacity of data is this node's alone, so a
	// write may append in place; a copy shares data and owns nothing.
	owned bool
	// kids are a directory's entries once listed (always, without h).
	kids   map[string]*node
	listed bool
	// pr and pw are a devPipe's reader and writer.
	pr io.Reader
	pw io.Writer
}

type device uint8

const (
	devNone device = iota
	devNull
	devZero
	devStdin
	devStdout
	devStderr
	devPipe // a /dev/fd/N of the shell: a process substitution's end
	devRandom
)

// FS is the sandbox's file system. Make it with New.
type FS struct {
	mu   sync.Mutex
	root *node // nil until tree makes it
	ws   *node // /workspace
	src  Source
	// srcRoot is the source's root directory.
	srcRoot Handle
	check   Checker
	lim     Limits
	clock   func() time.Time
	last    time.Time
	// srcTime is the modification time of the source's entries.
	srcTime time.Time

	written int64
	created int64
	// rndSeed numbers the openings of /dev/urandom.
	rndSeed atomic.Uint64
}

// New returns an FS with the fixed layout, /workspace on opts.Source.
func New(opts Options) *FS {
	lim := opts.Limits
	def := DefaultLimits()
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = def.MaxFileBytes
	}
	if lim.MaxWriteBytes <= 0 {
		lim.MaxWriteBytes = def.MaxWriteBytes
	}
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = def.MaxFiles
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	now := clock()
	srcTime := opts.SourceTime
	if srcTime.IsZero() {
		srcTime = now.Add(-time.Second)
	}
	return &FS{src: opts.Source, srcRoot: opts.Root, check: opts.Check, lim: lim, clock: clock, last: now, srcTime: srcTime}
}

// tree returns the root directory, making the fixed layout on first use
// (most scripts touch no file: they need not pay for it). f.mu is held.
func (f *FS) tree() *node {
	if f.root != nil {
		return f.root
	}
	mk := func(mode fs.FileMode) *node {
		return &node{dir: true, mode: mode, mtime: f.srcTime, kids: map[string]*node{}, listed: true}
	}
	f.root = mk(0o755)
	f.root.fixed = true
	f.ws = mk(0o755)
	if f.src != nil {
		f.ws.h, f.ws.kids, f.ws.listed = f.srcRoot, nil, false
	}
	tmp := mk(0o777)
	dev := mk(0o755)
	dev.fixed = true
	for _, d := range []struct {
		name string
		dev  device
	}{{"null", devNull}, {"zero", devZero}, {"stdin", devStdin}, {"stdout", devStdout}, {"stderr", devStderr},
		{"random", devRandom}, {"urandom", devRandom}} {
		dev.kids[d.name] = &node{dev: d.dev, mode: 0o666, mtime: f.srcTime, loaded: true}
	}
	fd := mk(0o755)
	fd.fixed = true
	dev.kids["fd"] = fd
	f.root.kids["workspace"] = f.ws
	f.root.kids["tmp"] = tmp
	f.root.kids["dev"] = dev
	return f.root
}

// Abs returns p as a clean absolute path: relative paths are taken from
// dir (itself absolute), and ".." never goes above "/".
func Abs(dir, p string) string {
	if !strings.HasPrefix(p, "/") {
		p = dir + "/" + p
	}
	return path.Clean("/" + p)
}

// Rel returns the workspace path of the absolute clean path p ("" for
// /workspace itself); ok is false when p is not under /workspace.
func Rel(p string) (rel string, ok bool) {
	switch {
	case p == WorkspaceDir:
		return "", true
	case strings.HasPrefix(p, WorkspaceDir+"/"):
		return p[len(WorkspaceDir)+1:], true
	}
	return "", false
}

// perr wraps err in a *fs.PathError.
func perr(op, p string, err error) error {
	return &fs.PathError{Op: op, Path: p, Err: err}
}

// allow asks the checker about an operation on p (absolute, clean).
func (f *FS) allow(op Op, p string) error {
	if f.check == nil {
		return nil
	}
	rel, ok := Rel(p)
	if !ok {
		return nil
	}
	if rel == "" && op == OpRead {
		return nil // looking at the mount point itself
	}
	if err := f.check(op, rel); err != nil {
		return &DeniedError{Op: op, Reason: err.Error()}
	}
	return nil
}

// stamp returns the time of a change: the clock, or just after the
// previous stamp when the clock did not move.
func (f *FS) stamp() time.Time {
	now := f.clock()
	if !now.After(f.last) {
		now = f.last.Add(time.Microsecond)
	}
	f.last = now
	return now
}

// children lists a directory, loading it from the source on first use.
func (f *FS) children(ctx context.Context, n *node) (map[string]*node, error) {
	if n.listed {
		return n.kids, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := f.src.ReadDir(ctx, n.h)
	if err != nil {
		return nil, err
	}
	kids := make(map[string]*node, len(entries))
	for _, e := range entries {
		c := &node{dir: e.Dir, mode: e.Mode.Perm(), mtime: f.srcTime, h: e.Handle, size: e.Size}
		if c.mode == 0 {
			c.mode = 0o644
			if c.dir {
				c.mode = 0o755
			}
		}
		kids[e.Name] = c
	}
	n.kids, n.listed = kids, true
	return kids, nil
}

// content returns a file's bytes, loading them from the source on first
// use.
func (f *FS) content(ctx context.Context, n *node) ([]byte, error) {
	if n.loaded {
		return n.data, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := f.src.ReadFile(ctx, n.h)
	if err != nil {
		return nil, err
	}
	n.data, n.loaded, n.size = data, true, int64(len(data))
	return data, nil
}

// walk returns the node at the absolute clean path p.
func (f *FS) walk(ctx context.Context, p string) (*node, error) {
	n := f.tree()
	if p == "/" {
		return n, nil
	}
	for part := range strings.SplitSeq(p[1:], "/") {
		if !n.dir {
			return nil, ErrNotDir
		}
		kids, err := f.children(ctx, n)
		if err != nil {
			return nil, err
		}
		c, ok := kids[part]
		if !ok {
			return nil, ErrNotExist
		}
		n = c
	}
	return n, nil
}

// parent returns the directory that holds p, and p's last name. p must
// not be "/".
func (f *FS) parent(ctx context.Context, p string) (*node, string, error) {
	dir, name := path.Split(p)
	d, err := f.walk(ctx, path.Clean(dir))
	if err != nil {
		return nil, "", err
	}
	if !d.dir {
		return nil, "", ErrNotDir
	}
	if _, err := f.children(ctx, d); err != nil {
		return nil, "", err
	}
	return d, name, nil
}

// touchDir marks a directory changed: its entries are no longer the
// source's.
func (f *FS) touchDir(d *node) {
	d.h = nil
	d.mtime = f.stamp()
}

// create adds a new node to directory d, counting it.
func (f *FS) create(d *node, name string, n *node) error {
	if d.fixed {
		return ErrReadOnly
	}
	if f.created >= f.lim.MaxFiles {
		return &LimitError{What: "files created", Limit: f.lim.MaxFiles}
	}
	f.created++
	f.touchDir(d)
	d.kids[name] = n
	return nil
}

// grow accounts for n more bytes written to a file that will be size
// bytes long.
func (f *FS) grow(n, size int64) error {
	if size > f.lim.MaxFileBytes {
		return &LimitError{What: "file size", Limit: f.lim.MaxFileBytes}
	}
	if f.written+n > f.lim.MaxWriteBytes {
		return &LimitError{What: "bytes written", Limit: f.lim.MaxWriteBytes}
	}
	f.written += n
	return nil
}

// Info describes an entry; it implements fs.FileInfo.
type Info struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

// Name returns the entry's base name.
func (i *Info) Name() string { return i.name }

// DirSize is the size a directory reports: one block, as ext4 gives it
// (ls -l, stat, du, find and test -s see what they see in bash).
const DirSize = 4096

// Size returns a file's length, DirSize for a directory.
func (i *Info) Size() int64 { return i.size }

// Mode returns the entry's type and permission bits.
func (i *Info) Mode() fs.FileMode { return i.mode }

// ModTime returns the time the script last changed the entry.
func (i *Info) ModTime() time.Time { return i.mtime }

// IsDir reports whether the entry is a directory.
func (i *Info) IsDir() bool { return i.mode.IsDir() }

// Sys returns nil.
func (i *Info) Sys() any { return nil }

func info(name string, n *node) *Info {
	i := &Info{name: name, mode: n.mode, mtime: n.mtime}
	switch {
	case n.dir:
		i.mode |= fs.ModeDir
		i.size = DirSize
	case n.dev == devPipe:
		i.mode |= fs.ModeNamedPipe
	case n.dev != devNone:
		i.mode |= fs.ModeDevice | fs.ModeCharDevice
	default:
		i.size = n.size
	}
	return i
}

func base(p string) string {
	if p == "/" {
		return "/"
	}
	return path.Base(p)
}

// Stat describes the entry at the absolute path p.
func (f *FS) Stat(ctx context.Context, p string) (*Info, error) {
	p = Abs("/", p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.allow(OpRead, p); err != nil {
		return nil, perr("stat", p, err)
	}
	n, err := f.walk(ctx, p)
	if err != nil {
		return nil, perr("stat", p, err)
	}
	return info(base(p), n), nil
}

// ReadDir lists the directory at p, sorted by name.
func (f *FS) ReadDir(ctx context.Context, p string) ([]*Info, error) {
	p = Abs("/", p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.allow(OpList, p); err != nil {
		return nil, perr("open", p, err)
	}
	n, err := f.walk(ctx, p)
	if err != nil {
		return nil, perr("open", p, err)
	}
	if !n.dir {
		return nil, perr("open", p, ErrNotDir)
	}
	kids, err := f.children(ctx, n)
	if err != nil {
		return nil, perr("open", p, err)
	}
	out := make([]*Info, 0, len(kids))
	for name, c := range kids {
		out = append(out, info(name, c))
	}
	slices.SortFunc(out, func(a, b *Info) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// ReadFile returns the content of the file at p. The slice is shared: the
// caller must not change it.
func (f *FS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	p = Abs("/", p)
	if r, ok := f.pipeReader(p); ok {
		return io.ReadAll(r)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.allow(OpRead, p); err != nil {
		return nil, perr("open", p, err)
	}
	n, err := f.walk(ctx, p)
	if err != nil {
		return nil, perr("open", p, err)
	}
	switch {
	case n.dir:
		return nil, perr("read", p, ErrIsDir)
	case n.dev == devNull:
		return nil, nil
	case n.dev != devNone:
		return nil, perr("open", p, ErrInvalid)
	}
	data, err := f.content(ctx, n)
	if err != nil {
		return nil, perr("read", p, err)
	}
	return data[:len(data):len(data)], nil
}

// WriteFile writes data as the file at p, creating it with perm (0: 0644)
// or replacing its content.
func (f *FS) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	w, err := f.Open(ctx, p, O_WRONLY|O_CREATE|O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// Open flags, the os package's values (so the shell's flags pass as
// they are).
const (
	O_RDONLY = 0x0
	O_WRONLY = 0x1
	O_RDWR   = 0x2
	O_APPEND = 0x400
	O_CREATE = 0x40
	O_EXCL   = 0x80
	O_TRUNC  = 0x200
)

// File is an open file: reads see its content as it was when opened;
// writes append to it (all writes do: the shell only truncates or
// appends).
type File struct {
	f     *FS
	n     *node
	p     string
	data  []byte // what a reader reads
	off   int
	write bool
	read  bool
	// rw: opened O_RDWR without O_APPEND (<>): reads and writes share
	// the offset, and a write overwrites the bytes there
	rw bool
	// closed is atomic: the interpreter closes a redirected file when the
	// command ends while the goroutine that copies it into the command's
	// stdin pipe may still be reading it.
	closed atomic.Bool
	// rnd is /dev/urandom's generator: seeded by the FS, so that a run
	// reads the same bytes every time.
	rnd *rand.Rand
}

// Open opens the file at p with the flags of os.OpenFile (O_RDONLY,
// O_WRONLY, O_RDWR, O_APPEND, O_CREATE, O_EXCL, O_TRUNC). A new file gets
// perm (0: 0644). /dev/null reads nothing and discards writes, /dev/zero
// reads zeros; /dev/stdin, /dev/stdout and /dev/stderr are the shell's to
// connect, and fail here.
func (f *FS) Open(ctx context.Context, p string, flag int, perm fs.FileMode) (*File, error) {
	p = Abs("/", p)
	write := flag&(O_WRONLY|O_RDWR) != 0
	read := flag&O_WRONLY == 0
	f.mu.Lock()
	defer f.mu.Unlock()
	op := OpRead
	if write {
		op = OpWrite
	}
	if err := f.allow(op, p); err != nil {
		return nil, perr("open", p, err)
	}
	if p == "/" {
		if write {
			return nil, perr("open", p, ErrIsDir)
		}
		return nil, perr("read", p, ErrIsDir)
	}
	n, err := f.walk(ctx, p)
	switch {
	case errors.Is(err, ErrNotExist) && flag&O_CREATE != 0:
		d, name, perr2 := f.parent(ctx, p)
		if perr2 != nil {
			return nil, perr("open", p, perr2)
		}
		if perm == 0 {
			perm = 0o644
		}
		n = &node{mode: perm.Perm(), mtime: f.stamp(), loaded: true, owned: true}
		if err := f.create(d, name, n); err != nil {
			return nil, perr("open", p, err)
		}
	case err != nil:
		return nil, perr("open", p, err)
	case flag&O_CREATE != 0 && flag&O_EXCL != 0:
		return nil, perr("open", p, ErrExist)
	}
	if n.dir {
		return nil, perr("open", p, ErrIsDir)
	}
	file := &File{f: f, n: n, p: p, write: write, read: read, rw: flag&O_RDWR != 0 && flag&O_APPEND == 0}
	switch n.dev {
	case devNone:
	case devNull, devZero:
		return file, nil
	case devRandom:
		file.rnd = rand.New(rand.NewPCG(f.rndSeed.Add(1), 0x5eed))
		return file, nil
	case devPipe:
		if write && n.pw == nil || read && !write && n.pr == nil {
			return nil, perr("open", p, ErrInvalid)
		}
		return file, nil
	default:
		return nil, perr("open", p, ErrInvalid)
	}
	if write && flag&O_TRUNC != 0 {
		if n.size > 0 || !n.loaded {
			n.data, n.loaded, n.size, n.h, n.owned = nil, true, 0, nil, true
		}
		n.mtime = f.stamp()
	}
	if read || (write && !n.loaded) {
		data, err := f.content(ctx, n)
		if err != nil {
			return nil, perr("read", p, err)
		}
		file.data = data
	}
	return file, nil
}

// Read reads the content the file had when it was opened.
func (fl *File) Read(b []byte) (int, error) {
	if fl.closed.Load() {
		return 0, perr("read", fl.p, ErrClosed)
	}
	if !fl.read {
		return 0, perr("read", fl.p, ErrInvalid)
	}
	if fl.n.dev == devZero {
		clear(b)
		return len(b), nil
	}
	if fl.n.dev == devPipe {
		return fl.n.pr.Read(b)
	}
	if fl.n.dev == devRandom {
		for i := range b {
			b[i] = byte(fl.rnd.Uint32())
		}
		return len(b), nil
	}
	if fl.off >= len(fl.data) {
		return 0, io.EOF
	}
	n := copy(b, fl.data[fl.off:])
	fl.off += n
	return n, nil
}

// Write appends b to the file (a file opened O_RDWR without O_APPEND:
// writes b at its offset).
func (fl *File) Write(b []byte) (int, error) {
	if fl.closed.Load() {
		return 0, perr("write", fl.p, ErrClosed)
	}
	if !fl.write {
		return 0, perr("write", fl.p, ErrInvalid)
	}
	if fl.n.dev == devPipe {
		return fl.n.pw.Write(b)
	}
	if fl.n.dev != devNone {
		return len(b), nil
	}
	f := fl.f
	f.mu.Lock()
	defer f.mu.Unlock()
	n := fl.n
	size := n.size + int64(len(b))
	if fl.rw && fl.off < len(n.data) {
		size = int64(max(len(n.data), fl.off+len(b)))
	}
	if err := f.grow(int64(len(b)), size); err != nil {
		return 0, perr("write", fl.p, err)
	}
	if len(b) == 0 {
		return 0, nil
	}
	if fl.rw && fl.off < len(n.data) {
		// <>: overwrite at the offset, in a copy (readers keep theirs)
		end := max(len(n.data), fl.off+len(b))
		data := make([]byte, end, end+512)
		copy(data, n.data)
		copy(data[fl.off:], b)
		n.data, n.owned = data, true
		n.size = int64(len(n.data))
		n.h = nil
		n.mtime = f.stamp()
		fl.off += len(b)
		fl.data = n.data[:len(n.data):len(n.data)]
		return len(b), nil
	}
	// Readers keep data[:len:len], so appending in place never shows
	// them new bytes; a slice shared with another node (a copy, or the
	// source's) is copied first.
	if !n.owned {
		n.data = append(make([]byte, 0, len(n.data)+len(b)+512), n.data...)
		n.owned = true
	}
	n.data = append(n.data, b...)
	n.size = int64(len(n.data))
	n.h = nil
	n.mtime = f.stamp()
	if fl.rw {
		fl.off = len(n.data)
		fl.data = n.data[:len(n.data):len(n.data)]
	}
	return len(b), nil
}

// Close closes the file.
func (fl *File) Close() error {
	fl.closed.Store(true)
	return nil
}

// Mkdir creates the directory p with perm (0: 0755). With parents, missing
// parents are created and an existing directory is no error (mkdir -p).
func (f *FS) Mkdir(ctx context.Context, p string, perm fs.FileMode, parents bool) error {
	p = Abs("/", p)
	if perm == 0 {
		perm = 0o755
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.allow(OpWrite, p); err != nil {
		return perr("mkdir", p, err)
	}
	if p == "/" {
		if parents {
			return nil
		}
		return perr("mkdir", p, ErrExist)
	}
	if parents {
		n := f.tree()
		for part := range strings.SplitSeq(p[1:], "/") {
			if !n.dir {
				return perr("mkdir", p, ErrNotDir)
			}
			kids, err := f.children(ctx, n)
			if err != nil {
				return perr("mkdir", p, err)
			}
			c, ok := kids[part]
			if !ok {
				c = &node{dir: true, mode: perm.Perm(), mtime: f.stamp(), kids: map[string]*node{}, listed: true}
				if err := f.create(n, part, c); err != nil {
					return perr("mkdir", p, err)
				}
			}
			n = c
		}
		if !n.dir {
			return perr("mkdir", p, ErrExist)
		}
		return nil
	}
	d, name, err := f.parent(ctx, p)
	if err != nil {
		return perr("mkdir", p, err)
	}
	if _, ok := d.kids[name]; ok {
		return perr("mkdir", p, ErrExist)
	}
	n := &node{dir: true, mode: perm.Perm(), mtime: f.stamp(), kids: map[string]*node{}, listed: true}
	if err := f.create(d, name, n); err != nil {
		return perr("mkdir", p, err)
	}
	return nil
}

// Remove removes the entry at p. A directory that holds entries is
// removed only when recursive is set (rm -r; else ErrNotEmpty, as rmdir).
func (f *FS) Remove(ctx context.Context, p string, recursive bool) error {
	p = Abs("/", p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.allow(OpRemove, p); err != nil {
		return perr("remove", p, err)
	}
	if p == "/" {
		return perr("remove", p, ErrBusy)
	}
	d, name, err := f.parent(ctx, p)
	if err != nil {
		return perr("remove", p, err)
	}
	n, ok := d.kids[name]
	if !ok {
		return perr("remove", p, ErrNotExist)
	}
	if d.fixed || n == f.ws || p == TmpDir {
		return perr("remove", p, ErrBusy)
	}
	if n.dir && !recursive {
		kids, err := f.children(ctx, n)
		if err != nil {
			return perr("remove", p, err)
		}
		if len(kids) > 0 {
			return perr("remove", p, ErrNotEmpty)
		}
	}
	delete(d.kids, name)
	f.touchDir(d)
	return nil
}

// Rename moves the entry at oldp to newp, as rename(2): an existing file
// at newp is replaced, an existing directory only by a directory and only
// when empty. A directory cannot move into itself.
func (f *FS) Rename(ctx context.Context, oldp, newp string) error {
	oldp, newp = Abs("/", oldp), Abs("/", newp)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.allow(OpRemove, oldp); err != nil {
		return perr("rename", oldp, err)
	}
	if err := f.allow(OpWrite, newp); err != nil {
		return perr("rename", newp, err)
	}
	if oldp == "/" || newp == "/" {
		return perr("rename", oldp, ErrBusy)
	}
	od, oname, err := f.parent(ctx, oldp)
	if err != nil {
		return perr("rename", oldp, err)
	}
	n, ok := od.kids[oname]
	if !ok {
		return perr("rename", oldp, ErrNotExist)
	}
	if od.fixed || n == f.ws || oldp == TmpDir {
		return perr("rename", oldp, ErrBusy)
	}
	if oldp == newp {
		return nil
	}
	if n.dir && strings.HasPrefix(newp, oldp+"/") {
		return perr("rename", newp, ErrInvalid)
	}
	nd, nname, err := f.parent(ctx, newp)
	if err != nil {
		return perr("rename", newp, err)
	}
	if old, ok := nd.kids[nname]; ok {
		switch {
		case old == f.ws || nd.fixed:
			return perr("rename", newp, ErrBusy)
		case old.dir && !n.dir:
			return perr("rename", newp, ErrIsDir)
		case !old.dir && n.dir:
			return perr("rename", newp, ErrNotDir)
		case old.dir:
			kids, err := f.children(ctx, old)
			if err != nil {
				return perr("rename", newp, err)
			}
			if len(kids) > 0 {
				return perr("rename", newp, ErrNotEmpty)
			}
		}
	} else if nd.fixed {
		return perr("rename", newp, ErrReadOnly)
	}
	delete(od.kids, oname)
	f.touchDir(od)
	nd.kids[nname] = n
	f.touchDir(nd)
	return nil
}

// Copy copies the file or directory tree at src to dst (which must not
// exist as a directory: cp resolves "into a directory" itself). An
// existing file at dst is overwritten. Content copied counts as written.
func (f *FS) Copy(ctx context.Context, src, dst string) error {
	src, dst = Abs("/", src), Abs("/", dst)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.allow(OpRead, src); err != nil {
		return perr("copy", src, err)
	}
	if err := f.allow(OpWrite, dst); err != nil {
		return perr("copy", dst, err)
	}
	n, err := f.walk(ctx, src)
	if err != nil {
		return perr("copy", src, err)
	}
	if n.dir && (dst == src || strings.HasPrefix(dst, src+"/")) {
		return perr("copy", dst, ErrInvalid)
	}
	d, name, err := f.parent(ctx, dst)
	if err != nil {
		return perr("copy", dst, err)
	}
	if old, ok := d.kids[name]; ok {
		if old.dir || n.dir {
			return perr("copy", dst, ErrExist)
		}
		if n.dev == devNone {
			if err := f.grow(n.size, n.size); err != nil {
				return perr("copy", dst, err)
			}
		}
		old.data, old.loaded, old.size, old.h, old.owned = n.data, n.loaded, n.size, n.h, false
		n.owned = false
		if n.dev != devNone {
			old.data, old.loaded, old.size, old.h = nil, true, 0, nil
		}
		old.mtime = f.stamp()
		f.touchDir(d)
		return nil
	}
	c, err := f.clone(ctx, n)
	if err != nil {
		return perr("copy", src, err)
	}
	if err := f.create(d, name, c); err != nil {
		return perr("copy", dst, err)
	}
	return nil
}

// clone deep-copies n, counting files and bytes; unchanged source entries
// keep their handles (and are not loaded).
func (f *FS) clone(ctx context.Context, n *node) (*node, error) {
	c := &node{dir: n.dir, mode: n.mode, mtime: f.stamp(), h: n.h, size: n.size, data: n.data, loaded: n.loaded}
	n.owned = false // both share data's spare capacity now
	if n.dev != devNone {
		c.h, c.data, c.loaded, c.size = nil, nil, true, 0
	}
	if !n.dir {
		if err := f.grow(c.size, c.size); err != nil {
			return nil, err
		}
		return c, nil
	}
	if !n.listed {
		return c, nil // the whole subtree is the source's: share it
	}
	c.kids, c.listed = make(map[string]*node, len(n.kids)), true
	for name, k := range n.kids {
		if f.created >= f.lim.MaxFiles {
			return nil, &LimitError{What: "files created", Limit: f.lim.MaxFiles}
		}
		f.created++
		kc, err := f.clone(ctx, k)
		if err != nil {
			return nil, err
		}
		c.kids[name] = kc
	}
	return c, nil
}

// Touch creates an empty file at p if nothing is there (unless noCreate),
// else sets the entry's modification time to mtime (the zero time: now).
func (f *FS) Touch(ctx context.Context, p string, mtime time.Time, noCreate bool) error {
	p = Abs("/", p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.allow(OpWrite, p); err != nil {
		return perr("touch", p, err)
	}
	if mtime.IsZero() {
		mtime = f.stamp()
	}
	n, err := f.walk(ctx, p)
	switch {
	case errors.Is(err, ErrNotExist):
		if noCreate {
			return nil
		}
		d, name, err := f.parent(ctx, p)
		if err != nil {
			return perr("touch", p, err)
		}
		return f.wrap("touch", p, f.create(d, name, &node{mode: 0o644, mtime: mtime, loaded: true}))
	case err != nil:
		return perr("touch", p, err)
	}
	if p == "/" || n.fixed {
		return perr("touch", p, ErrReadOnly)
	}
	if n.dir {
		// A directory's stamp is not part of the workspace; only the
		// listing order of ls -t sees it.
		n.mtime = mtime
		return nil
	}
	n.mtime = mtime
	return nil
}

func (f *FS) wrap(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return perr(op, p, err)
}

// Chmod sets the permission bits of the entry at p.
func (f *FS) Chmod(ctx context.Context, p string, mode fs.FileMode) error {
	p = Abs("/", p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.allow(OpWrite, p); err != nil {
		return perr("chmod", p, err)
	}
	n, err := f.walk(ctx, p)
	if err != nil {
		return perr("chmod", p, err)
	}
	if n.fixed || n.dev != devNone || p == "/" || n == f.ws {
		return perr("chmod", p, ErrReadOnly)
	}
	if n.mode != mode.Perm() {
		// The mode is part of the parent's entry, not of the node.
		d, _, err := f.parent(ctx, p)
		if err != nil {
			return perr("chmod", p, err)
		}
		d.h = nil
		n.mode = mode.Perm()
	}
	return nil
}

// Usage reports what the script wrote so far: bytes and entries created.
func (f *FS) Usage() (written, created int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written, f.created
}

// Limits returns the limits in force.
func (f *FS) Limits() Limits { return f.lim }

// Set makes the workspace entry at rel (a clean workspace path, not the
// root) the source entry e — a file's content, or a directory's whole
// subtree — or removes it when e is nil (a missing entry is no error).
// Missing parent directories are created. It is a change the caller made
// to the workspace (a workspace tool's, in a script), not the script's:
// the Checker is not asked and the Limits do not count it. The entry
// replaces the node at rel, so a file the script holds open there is no
// longer the workspace's, as after a rename over it; e.Name is ignored.
// An FS without a Source cannot read entries: Set fails with ErrInvalid
// unless e is nil, as it does for an e without a Handle.
func (f *FS) Set(ctx context.Context, rel string, e *SourceEntry) error {
	p := Abs("/", WorkspaceDir+"/"+rel)
	if _, ok := Rel(p); !ok || p == WorkspaceDir || p != WorkspaceDir+"/"+rel || e != nil && (e.Handle == nil || f.src == nil) {
		return perr("set", WorkspaceDir+"/"+rel, ErrInvalid) // a bad path, or an entry the FS cannot read
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tree()
	d := f.ws
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		kids, err := f.children(ctx, d)
		if err != nil {
			return perr("set", p, err)
		}
		c, ok := kids[part]
		switch {
		case !ok && e == nil:
			return nil
		case !ok:
			c = &node{dir: true, mode: 0o755, mtime: f.stamp(), kids: map[string]*node{}, listed: true}
			kids[part] = c
			f.touchDir(d)
		case !c.dir:
			return perr("set", p, ErrNotDir)
		}
		d = c
	}
	kids, err := f.children(ctx, d)
	if err != nil {
		return perr("set", p, err)
	}
	name := parts[len(parts)-1]
	if e == nil {
		if _, ok := kids[name]; ok {
			delete(kids, name)
			f.touchDir(d)
		}
		return nil
	}
	n := &node{dir: e.Dir, mode: e.Mode.Perm(), mtime: f.stamp(), h: e.Handle, size: e.Size}
	if n.mode == 0 {
		n.mode = 0o644
		if n.dir {
			n.mode = 0o755
		}
	}
	if n.dir {
		n.size = 0
	}
	kids[name] = n
	f.touchDir(d)
	return nil
}

// AttachFD makes /dev/fd/n the shell's descriptor n: reads come from r,
// writes go to w (either may be nil). The shell attaches the ends of its
// process substitutions, so that a utility given <(...)'s path reads it.
// detach removes it.
func (f *FS) AttachFD(n int, r io.Reader, w io.Writer) (detach func()) {
	name := strconv.Itoa(n)
	f.mu.Lock()
	dir := f.tree().kids["dev"].kids["fd"]
	node := &node{dev: devPipe, mode: 0o600, mtime: f.stamp(), loaded: true, pr: r, pw: w}
	dir.kids[name] = node
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		if dir.kids[name] == node {
			delete(dir.kids, name)
		}
		f.mu.Unlock()
	}
}

// pipeReader returns the reader of an attached /dev/fd/N.
func (f *FS) pipeReader(p string) (io.Reader, bool) {
	if !strings.HasPrefix(p, "/dev/fd/") {
		return nil, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.walk(context.Background(), p)
	if err != nil || n.dev != devPipe || n.pr == nil {
		return nil, false
	}
	return n.pr, true
}
