package vfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// memSource is a Source over nested maps: a string is a file, a map a
// directory. Handles are the entries' paths.
type memSource struct {
	tree  map[string]any
	mu    sync.Mutex
	reads []string
}

func (s *memSource) at(h Handle) any {
	p, _ := h.(string)
	var cur any = s.tree
	if p == "" {
		return cur
	}
	for part := range strings.SplitSeq(p, "/") {
		cur = cur.(map[string]any)[part]
	}
	return cur
}

func (s *memSource) ReadDir(ctx context.Context, h Handle) ([]SourceEntry, error) {
	s.mu.Lock()
	s.reads = append(s.reads, "dir:"+h.(string))
	s.mu.Unlock()
	var out []SourceEntry
	for name, v := range s.at(h).(map[string]any) {
		p := name
		if h.(string) != "" {
			p = h.(string) + "/" + name
		}
		switch v := v.(type) {
		case string:
			out = append(out, SourceEntry{Name: name, Size: int64(len(v)), Mode: 0o644, Handle: p})
		default:
			out = append(out, SourceEntry{Name: name, Dir: true, Mode: 0o755, Handle: p})
		}
	}
	return out, nil
}

func (s *memSource) ReadFile(ctx context.Context, h Handle) ([]byte, error) {
	s.mu.Lock()
	s.reads = append(s.reads, "file:"+h.(string))
	s.mu.Unlock()
	return []byte(s.at(h).(string)), nil
}

func newSource() *memSource {
	return &memSource{tree: map[string]any{
		"README.md": "hello\n",
		"src": map[string]any{
			"a.go": "package a\n",
			"b.go": "package b\n",
			"sub":  map[string]any{"c.txt": "c\n"},
		},
		"docs": map[string]any{"x.md": "x\n"},
	}}
}

func newFS(t *testing.T, opts Options) *FS {
	t.Helper()
	if opts.Clock == nil {
		base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		opts.Clock = func() time.Time { return base }
	}
	return New(opts)
}

func read(t *testing.T, f *FS, p string) string {
	t.Helper()
	b, err := f.ReadFile(t.Context(), p)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", p, err)
	}
	return string(b)
}

func names(t *testing.T, f *FS, p string) []string {
	t.Helper()
	infos, err := f.ReadDir(t.Context(), p)
	if err != nil {
		t.Fatalf("ReadDir(%s): %v", p, err)
	}
	var out []string
	for _, i := range infos {
		n := i.Name()
		if i.IsDir() {
			n += "/"
		}
		out = append(out, n)
	}
	return out
}

func TestLayout(t *testing.T) {
	f := newFS(t, Options{})
	if got, want := names(t, f, "/"), []string{"dev/", "tmp/", "workspace/"}; !slices.Equal(got, want) {
		t.Errorf("/ = %v; want %v", got, want)
	}
	if got, want := names(t, f, "/dev"), []string{"fd/", "null", "random", "stderr", "stdin", "stdout", "urandom", "zero"}; !slices.Equal(got, want) {
		t.Errorf("/dev = %v; want %v", got, want)
	}
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		err  error
		fn   func() error
	}{
		{"write at the root", ErrReadOnly, func() error { return f.WriteFile(ctx, "/etc", nil, 0) }},
		{"mkdir at the root", ErrReadOnly, func() error { return f.Mkdir(ctx, "/home", 0, true) }},
		{"write in /dev", ErrReadOnly, func() error { return f.WriteFile(ctx, "/dev/x", nil, 0) }},
		{"remove /workspace", ErrBusy, func() error { return f.Remove(ctx, "/workspace", true) }},
		{"remove /tmp", ErrBusy, func() error { return f.Remove(ctx, "/tmp", true) }},
		{"remove /dev/null", ErrBusy, func() error { return f.Remove(ctx, "/dev/null", false) }},
		{"rename /workspace", ErrBusy, func() error { return f.Rename(ctx, "/workspace", "/tmp/w") }},
		{"host path", ErrNotExist, func() error { _, err := f.ReadFile(ctx, "/etc/passwd"); return err }},
		{"dotdot stays inside", ErrNotExist, func() error { _, err := f.ReadFile(ctx, "/workspace/../../../etc/passwd"); return err }},
		{"read a directory", ErrIsDir, func() error { _, err := f.ReadFile(ctx, "/tmp"); return err }},
		{"through a file", ErrNotDir, func() error {
			if err := f.WriteFile(ctx, "/tmp/file", []byte("x"), 0); err != nil {
				return err
			}
			_, err := f.ReadFile(ctx, "/tmp/file/x")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.fn()
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v; want %v", err, tc.err)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) {
				t.Fatalf("err %T is not a *fs.PathError", err)
			}
		})
	}
	if err := f.WriteFile(ctx, "/dev/null", []byte("discarded"), 0); err != nil {
		t.Errorf("write /dev/null: %v", err)
	}
	if got := read(t, f, "/dev/null"); got != "" {
		t.Errorf("/dev/null reads %q", got)
	}
}

func TestAbs(t *testing.T) {
	for _, tc := range []struct{ dir, p, want string }{
		{"/workspace", "a.txt", "/workspace/a.txt"},
		{"/workspace/src", "../b", "/workspace/b"},
		{"/workspace", "../../../../etc", "/etc"},
		{"/workspace", "/tmp//x/./y/", "/tmp/x/y"},
		{"/", "..", "/"},
		{"/workspace", "", "/workspace"},
	} {
		if got := Abs(tc.dir, tc.p); got != tc.want {
			t.Errorf("Abs(%q, %q) = %q; want %q", tc.dir, tc.p, got, tc.want)
		}
	}
}

func TestOverlay(t *testing.T) {
	src := newSource()
	f := newFS(t, Options{Source: src, Root: ""})
	ctx := t.Context()
	if got := read(t, f, "/workspace/src/a.go"); got != "package a\n" {
		t.Errorf("a.go = %q", got)
	}
	if f.Changed() {
		t.Error("reading changed the workspace")
	}
	if e := f.Export(); e.Handle != "" || e.Entries != nil {
		t.Errorf("unchanged export = %+v; want the root's handle", e)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.WriteFile(ctx, "/workspace/notes/new.md", nil, 0); !errors.Is(err, ErrNotExist) {
		t.Fatalf("write without parent: %v", err)
	}
	must(f.Mkdir(ctx, "/workspace/notes", 0, false))
	must(f.WriteFile(ctx, "/workspace/notes/new.md", []byte("new\n"), 0))
	must(f.Rename(ctx, "/workspace/src/sub", "/workspace/moved"))
	must(f.Remove(ctx, "/workspace/docs", true))
	w, err := f.Open(ctx, "/workspace/README.md", O_WRONLY|O_APPEND, 0)
	must(err)
	_, err = io.WriteString(w, "more\n")
	must(err)
	must(w.Close())
	if got := read(t, f, "/workspace/README.md"); got != "hello\nmore\n" {
		t.Errorf("README = %q", got)
	}
	if got, want := names(t, f, "/workspace"), []string{"README.md", "moved/", "notes/", "src/"}; !slices.Equal(got, want) {
		t.Errorf("workspace = %v; want %v", got, want)
	}
	if !f.Changed() {
		t.Error("Changed is false")
	}
	var b strings.Builder
	var dump func(prefix string, n *Node)
	dump = func(prefix string, n *Node) {
		switch {
		case n.Handle != nil:
			fmt.Fprintf(&b, "%s%s =%v\n", prefix, n.Name, n.Handle)
		case n.Dir:
			fmt.Fprintf(&b, "%s%s/\n", prefix, n.Name)
			for _, c := range n.Entries {
				dump(prefix+"  ", c)
			}
		default:
			fmt.Fprintf(&b, "%s%s %q\n", prefix, n.Name, n.Data)
		}
	}
	dump("", f.Export())
	want := `/
  README.md "hello\nmore\n"
  moved =src/sub
  notes/
    new.md "new\n"
  src/
    a.go =src/a.go
    b.go =src/b.go
`
	if b.String() != want {
		t.Errorf("export:\n%s\nwant:\n%s", b.String(), want)
	}
	// The moved subtree was never listed: it is reused whole.
	for _, r := range src.reads {
		if strings.Contains(r, "sub") || strings.Contains(r, "docs") {
			t.Errorf("source read %s, which the script never looked into", r)
		}
	}
}

func TestRename(t *testing.T) {
	ctx := t.Context()
	f := newFS(t, Options{Source: newSource(), Root: ""})
	for _, tc := range []struct {
		name, from, to string
		err            error
	}{
		{"into itself", "/workspace/src", "/workspace/src/sub/x", ErrInvalid},
		{"file over dir", "/workspace/README.md", "/workspace/docs", ErrIsDir},
		{"dir over file", "/workspace/docs", "/workspace/README.md", ErrNotDir},
		{"over a full dir", "/workspace/docs", "/workspace/src", ErrNotEmpty},
		{"missing", "/workspace/nope", "/workspace/x", ErrNotExist},
		{"out of the workspace", "/workspace/README.md", "/tmp/r.md", nil},
		{"back", "/tmp/r.md", "/workspace/R.md", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := f.Rename(ctx, tc.from, tc.to); !errors.Is(err, tc.err) {
				t.Fatalf("err = %v; want %v", err, tc.err)
			}
		})
	}
	if got := read(t, f, "/workspace/R.md"); got != "hello\n" {
		t.Errorf("R.md = %q", got)
	}
}

func TestCopyDoesNotShareWrites(t *testing.T) {
	ctx := t.Context()
	f := newFS(t, Options{})
	if err := f.WriteFile(ctx, "/tmp/a", []byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Copy(ctx, "/tmp/a", "/tmp/b"); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct{ p, s string }{{"/tmp/a", "1"}, {"/tmp/b", "2"}} {
		w, err := f.Open(ctx, x.p, O_WRONLY|O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, x.s)
	}
	if a, b := read(t, f, "/tmp/a"), read(t, f, "/tmp/b"); a != "abc1" || b != "abc2" {
		t.Errorf("a = %q, b = %q; want abc1, abc2", a, b)
	}
	// A reader keeps what the file held when it was opened.
	r, _ := f.Open(ctx, "/tmp/a", O_RDONLY, 0)
	w, _ := f.Open(ctx, "/tmp/a", O_WRONLY|O_APPEND, 0)
	io.WriteString(w, "later")
	got, _ := io.ReadAll(r)
	if string(got) != "abc1" {
		t.Errorf("reader saw %q; want abc1", got)
	}
	// Copying a directory into itself is refused.
	f.Mkdir(ctx, "/tmp/d", 0, false)
	if err := f.Copy(ctx, "/tmp/d", "/tmp/d/e"); !errors.Is(err, ErrInvalid) {
		t.Errorf("copy into itself: %v", err)
	}
}

func TestLimits(t *testing.T) {
	ctx := t.Context()
	f := newFS(t, Options{Limits: Limits{MaxFileBytes: 10, MaxWriteBytes: 25, MaxFiles: 3}})
	if err := f.WriteFile(ctx, "/tmp/big", []byte("01234567890"), 0); err == nil || !strings.Contains(err.Error(), "File too large (a file may hold at most 10 bytes)") {
		t.Errorf("big file: %v", err)
	}
	for i := range 2 {
		if err := f.WriteFile(ctx, fmt.Sprintf("/tmp/f%d", i), []byte("0123456789"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.WriteFile(ctx, "/tmp/f0", []byte("0123456789"), 0); err == nil || !strings.Contains(err.Error(), "a script may write at most 25 bytes") {
		t.Errorf("write budget: %v", err)
	}
	if err := f.Mkdir(ctx, "/tmp/d", 0, false); err == nil || !strings.Contains(err.Error(), "at most 3 files") {
		t.Errorf("files: %v", err)
	}
	var le *LimitError
	if err := f.Mkdir(ctx, "/tmp/d", 0, false); !errors.As(err, &le) {
		t.Errorf("err %v is not a *LimitError", err)
	}
}

func TestChecker(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	var asked []string
	f := newFS(t, Options{Source: newSource(), Root: "", Check: func(op Op, p string) error {
		mu.Lock()
		asked = append(asked, string(op)+" "+p)
		mu.Unlock()
		if p == "src" || strings.HasPrefix(p, "src/") {
			return nil
		}
		return fmt.Errorf("path %q is not under the allowed path prefixes [src]", p)
	}})
	if _, err := f.Stat(ctx, "/workspace"); err != nil {
		t.Errorf("stat of the mount point: %v", err)
	}
	if got := read(t, f, "/workspace/src/a.go"); got != "package a\n" {
		t.Errorf("a.go = %q", got)
	}
	_, err := f.ReadFile(ctx, "/workspace/README.md")
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), `Permission denied: path "README.md" is not under the allowed path prefixes [src]`) {
		t.Errorf("denied read: %v", err)
	}
	if _, err := f.ReadDir(ctx, "/workspace"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("list root: %v", err)
	}
	if err := f.Rename(ctx, "/workspace/src/a.go", "/workspace/a.go"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("rename out of the prefix: %v", err)
	}
	if err := f.WriteFile(ctx, "/tmp/free", []byte("x"), 0); err != nil {
		t.Errorf("/tmp is not the workspace's: %v", err)
	}
	want := []string{"read src/a.go", "read README.md", "list ", "remove src/a.go", "write a.go"}
	if !slices.Equal(asked, want) {
		t.Errorf("asked %q; want %q", asked, want)
	}
}

func TestStampsIncrease(t *testing.T) {
	ctx := t.Context()
	f := newFS(t, Options{}) // a clock that stands still
	var last time.Time
	for i := range 5 {
		p := fmt.Sprintf("/tmp/%d", i)
		if err := f.WriteFile(ctx, p, []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat(ctx, p)
		if !fi.ModTime().After(last) {
			t.Errorf("%s: mtime %v not after %v", p, fi.ModTime(), last)
		}
		last = fi.ModTime()
	}
}

func TestConcurrentWriters(t *testing.T) {
	ctx := t.Context()
	f := newFS(t, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			w, err := f.Open(ctx, "/tmp/log", O_WRONLY|O_CREATE|O_APPEND, 0)
			if err != nil {
				t.Error(err)
				return
			}
			for range 100 {
				fmt.Fprintf(w, "%d\n", i)
			}
			f.ReadDir(ctx, "/tmp")
		})
	}
	wg.Wait()
	if got := strings.Count(read(t, f, "/tmp/log"), "\n"); got != 800 {
		t.Errorf("%d lines; want 800", got)
	}
}

func TestChmodChangesTheParent(t *testing.T) {
	ctx := t.Context()
	f := newFS(t, Options{Source: newSource(), Root: ""})
	if err := f.Chmod(ctx, "/workspace/src/a.go", 0o755); err != nil {
		t.Fatal(err)
	}
	e := f.Export()
	var src *Node
	for _, c := range e.Entries {
		if c.Name == "src" {
			src = c
		}
	}
	if src == nil || src.Handle != nil || src.Entries[0].Mode != 0o755 || src.Entries[0].Handle == nil {
		t.Errorf("src after chmod: %+v", src)
	}
}

// TestSet: entries a caller sets replace what is at their path, with
// parents made as needed, without the Checker or the Limits; a file the
// script holds open there is cut off, as after a rename over it.
func TestSet(t *testing.T) {
	ctx := t.Context()
	src := &memSource{tree: map[string]any{"a": "A", "d": map[string]any{"x": "X"}}}
	deny := func(op Op, p string) error {
		if p == "secret" {
			return errors.New("no")
		}
		return nil
	}
	f := New(Options{Source: src, Root: "", Check: deny, Limits: Limits{MaxFiles: 1}})
	open, err := f.Open(ctx, "/workspace/a", O_WRONLY|O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel string
		e   *SourceEntry
	}{
		{"a", &SourceEntry{Size: 1, Handle: "d/x"}},                     // a file over a file
		{"new/deep/f", &SourceEntry{Size: 1, Mode: 0o755, Handle: "a"}}, // parents made, past MaxFiles
		{"e", &SourceEntry{Dir: true, Handle: "d"}},                     // a whole subtree
		{"d/x", nil},          // removed
		{"nothing/here", nil}, // nothing to remove
		{"secret", &SourceEntry{Size: 1, Handle: "a"}}, // the Checker is not asked
	} {
		if err := f.Set(ctx, c.rel, c.e); err != nil {
			t.Fatalf("Set(%q): %v", c.rel, err)
		}
	}
	open.Write([]byte("lost"))
	open.Close()
	f.check = nil
	for p, want := range map[string]string{"a": "X", "new/deep/f": "A", "e/x": "X", "secret": "A"} {
		if got, err := f.ReadFile(ctx, "/workspace/"+p); string(got) != want || err != nil {
			t.Errorf("%s: %q, %v; want %q", p, got, err, want)
		}
	}
	if info, err := f.Stat(ctx, "/workspace/new/deep/f"); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("mode of new/deep/f: %v, %v", info, err)
	}
	for _, p := range []string{"d/x", "nothing"} {
		if _, err := f.Stat(ctx, "/workspace/"+p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v; want not found", p, err)
		}
	}
	if !f.Changed() {
		t.Error("Changed is false after Set")
	}
	for _, bad := range []string{"", "../x", "a/../b", "/abs", "a//b"} {
		if err := f.Set(ctx, bad, nil); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Set(%q): %v; want Invalid argument", bad, err)
		}
	}
	if err := f.Set(ctx, "a/b", &SourceEntry{Handle: "a"}); err == nil {
		t.Error("Set under a file succeeded")
	}
	if err := New(Options{}).Set(ctx, "a", &SourceEntry{Handle: "a"}); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Set without a Source: %v; want Invalid argument", err)
	}
}
