package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// build writes files (path → contents) into an empty tree in order.
func build(t testing.TB, s Store, files ...string) cas.Ref {
	t.Helper()
	ctx := context.Background()
	root, err := EmptyRoot(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(files); i += 2 {
		if root, _, err = WriteBytes(ctx, s, root, files[i], []byte(files[i+1]), 0); err != nil {
			t.Fatalf("write %s: %v", files[i], err)
		}
	}
	return root
}

// dump lists every entry of a tree as "path kind size [contents]".
func dump(t testing.TB, g cas.Getter, root cas.Ref) string {
	t.Helper()
	res, err := List(context.Background(), g, root, ListOptions{Recursive: true, Limit: MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range res.Entries {
		fmt.Fprintf(&b, "%s %s %d %o", e.Path, e.Kind, e.Size, e.Mode)
		if e.Kind == KindFile {
			data, err := g.Get(context.Background(), e.Hash)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestCleanPath(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      string // part of the error, "" for none
	}{
		{"", "", ""},
		{".", "", ""},
		{"./", "", ""},
		{"a", "a", ""},
		{"a/b/c.txt", "a/b/c.txt", ""},
		{"a//b/./c/", "a/b/c", ""},
		{"dir/", "dir", ""},
		{"héllo/wörld ☃.txt", "héllo/wörld ☃.txt", ""},
		{"...", "...", ""},
		{"a/..b/c..", "a/..b/c..", ""},
		{"..", "", "escapes the workspace"},
		{"../etc/passwd", "", "escapes the workspace"},
		{"a/../b", "", "escapes the workspace"},
		{"a/b/..", "", "escapes the workspace"},
		{"/etc/passwd", "", "is absolute"},
		{"/", "", "is absolute"},
		{`a\b`, "", "NUL or backslash"},
		{`..\..\x`, "", "NUL or backslash"},
		{"a\x00b", "", "NUL or backslash"},
		{"a\xffb", "", "not valid UTF-8"},
		{strings.Repeat("a/", 2049), "", "limit is 4096"},
		{strings.Repeat("x", 256), "", "limit is 255"},
		{strings.Repeat("x", 255), strings.Repeat("x", 255), ""},
	} {
		got, err := CleanPath(tc.in)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("CleanPath(%q): %v", tc.in, err)
		case tc.bad == "" && got != tc.want:
			t.Errorf("CleanPath(%q) = %q; want %q", tc.in, got, tc.want)
		case tc.bad != "" && err == nil:
			t.Errorf("CleanPath(%q) = %q; want an error containing %q", tc.in, got, tc.bad)
		case tc.bad != "" && (!errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("CleanPath(%q) error %q; want ErrInvalidPath containing %q", tc.in, err, tc.bad)
		}
	}
}

func TestComparePaths(t *testing.T) {
	// The walk order: a directory, then its entries; names bytewise.
	want := []string{"", "a", "a/b", "a/b/c", "a/c", "a-c", "a.txt", "b", "é"}
	got := slices.Clone(want)
	rand.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
	slices.SortFunc(got, comparePaths)
	if !slices.Equal(got, want) {
		t.Fatalf("sorted %q; want %q", got, want)
	}
}

func TestTreeOps(t *testing.T) {
	ctx := t.Context()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	type op struct {
		do   string // write, exec, rm, rmr, edit, editall
		path string
		arg  string // contents; for edits "old|new"
	}
	for _, tc := range []struct {
		name string
		ops  []op
		want string // dump after the ops, or the error of the last op
	}{
		{"one file", []op{{"write", "a.txt", "hi"}}, "a.txt file 2 644 \"hi\"\n"},
		{"empty file", []op{{"write", "empty", ""}}, "empty file 0 644 \"\"\n"},
		{"nested dirs", []op{{"write", "a/b/c/d.txt", "deep"}, {"write", "a/x", "1"}},
			"a dir 5 755\na/b dir 4 755\na/b/c dir 4 755\na/b/c/d.txt file 4 644 \"deep\"\na/x file 1 644 \"1\"\n"},
		{"unicode", []op{{"write", "héllo/☃.txt", "snow ☃"}}, "héllo dir 8 755\nhéllo/☃.txt file 8 644 \"snow ☃\"\n"},
		{"overwrite keeps mode", []op{{"exec", "run.sh", "v1"}, {"write", "run.sh", "v2"}}, "run.sh file 2 755 \"v2\"\n"},
		{"cleaned path", []op{{"write", "./a//b/", "x"}}, "a dir 1 755\na/b file 1 644 \"x\"\n"},
		{"remove file keeps dir", []op{{"write", "d/f", "x"}, {"rm", "d/f", ""}}, "d dir 0 755\n"},
		{"remove dir recursive", []op{{"write", "d/e/f", "x"}, {"write", "g", "y"}, {"rmr", "d", ""}}, "g file 1 644 \"y\"\n"},
		{"remove empty dir", []op{{"write", "d/f", "x"}, {"rm", "d/f", ""}, {"rm", "d", ""}}, ""},
		{"edit", []op{{"write", "f", "a b c"}, {"edit", "f", "b|B"}}, "f file 5 644 \"a B c\"\n"},
		{"edit all", []op{{"write", "f", "x x x"}, {"editall", "f", "x|yy"}}, "f file 8 644 \"yy yy yy\"\n"},
		{"edit delete", []op{{"write", "f", "keep drop"}, {"edit", "f", " drop|"}}, "f file 4 644 \"keep\"\n"},
		// errors
		{"escape", []op{{"write", "../x", "x"}}, "escapes the workspace"},
		{"absolute", []op{{"write", "/etc/passwd", "x"}}, "is absolute"},
		{"write root", []op{{"write", "", "x"}}, "the root is a directory"},
		{"write over dir", []op{{"write", "d/f", "x"}, {"write", "d", "x"}}, "workspace write d: is a directory"},
		{"write under file", []op{{"write", "f", "x"}, {"write", "f/g", "x"}}, "workspace write f/g: not a directory: f is a file"},
		{"remove missing", []op{{"rm", "nope", ""}}, "workspace remove nope: not found"},
		{"remove missing parent", []op{{"rm", "a/b/c", ""}}, "workspace remove a/b/c: not found (a does not exist)"},
		{"remove non-empty", []op{{"write", "d/f", "x"}, {"rm", "d", ""}}, "directory not empty: it holds 1 entries"},
		{"remove root", []op{{"rmr", ".", ""}}, "the root cannot be removed"},
		{"edit no match", []op{{"write", "f", "abc"}, {"edit", "f", "z|y"}}, "old_string not found"},
		{"edit ambiguous", []op{{"write", "f", "x\ny x\n\nx"}, {"edit", "f", "x|y"}}, "old_string occurs 3 times (lines 1, 2, 4)"},
		{"edit dir", []op{{"write", "d/f", "x"}, {"edit", "d", "x|y"}}, "workspace edit d: is a directory"},
		{"edit same", []op{{"write", "f", "x"}, {"edit", "f", "x|x"}}, "old_string and new_string are the same"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := cas.NewMemory()
			root := build(t, s)
			var err error
			for _, o := range tc.ops {
				switch o.do {
				case "write":
					root, _, err = WriteBytes(ctx, s, root, o.path, []byte(o.arg), 0)
				case "exec":
					root, _, err = WriteBytes(ctx, s, root, o.path, []byte(o.arg), ModeExec)
				case "rm", "rmr":
					root, _, err = Remove(ctx, s, root, o.path, o.do == "rmr")
				case "edit", "editall":
					old, repl, _ := strings.Cut(o.arg, "|")
					root, _, err = EditFile(ctx, s, root, o.path, old, repl, o.do == "editall")
				}
				if err != nil {
					break
				}
			}
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) || tc.want == "" {
					t.Fatalf("error %q; want it to contain %q", err, tc.want)
				}
				return
			}
			if got := dump(t, s, root); got != tc.want {
				t.Fatalf("tree:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
	t.Run("large file", func(t *testing.T) {
		s := cas.NewMemory()
		root, blob, err := WriteBytes(ctx, s, build(t, s), "big/blob.bin", big, 0)
		if err != nil {
			t.Fatal(err)
		}
		if blob != cas.Sum(big) {
			t.Errorf("blob ref %s; want the BLAKE3 of the bytes %s", blob, cas.Sum(big))
		}
		got, e, err := ReadBytes(ctx, s, root, "big/blob.bin", nil)
		if err != nil || !bytes.Equal(got, big) || e.Size != uint64(len(big)) {
			t.Fatalf("read back %d bytes (entry size %d), %v; want %d", len(got), e.Size, err, len(big))
		}
		part, _, err := ReadBytes(ctx, s, root, "big/blob.bin", &Range{Start: 16, End: 20})
		if err != nil || string(part) != "0123" {
			t.Fatalf("range read %q, %v; want \"0123\"", part, err)
		}
		d, err := ReadRef(ctx, s, root, "big")
		if err != nil || d.Kind != KindDir || d.Size != uint64(len(big)) {
			t.Fatalf("dir entry %+v, %v; want a dir of size %d", d, err, len(big))
		}
	})
}

func TestReadBytesRanges(t *testing.T) {
	ctx := t.Context()
	s := cas.NewMemory()
	root := build(t, s, "f", "0123456789", "d/g", "x")
	for _, tc := range []struct {
		r    *Range
		want string
		err  error
	}{
		{nil, "0123456789", nil},
		{&Range{0, 0}, "", nil},
		{&Range{2, 5}, "234", nil},
		{&Range{8, 100}, "89", nil},
		{&Range{10, 10}, "", nil},
		{&Range{11, 12}, "", ErrBadRange},
		{&Range{5, 2}, "", ErrBadRange},
	} {
		got, _, err := ReadBytes(ctx, s, root, "f", tc.r)
		if !errors.Is(err, tc.err) || err == nil && string(got) != tc.want {
			t.Errorf("ReadBytes(%v) = %q, %v; want %q, %v", tc.r, got, err, tc.want, tc.err)
		}
	}
	for p, want := range map[string]error{"d": ErrIsDir, "": ErrIsDir, "nope": ErrNotFound, "f/x": ErrNotDir, "../f": ErrInvalidPath} {
		if _, _, err := ReadBytes(ctx, s, root, p, nil); !errors.Is(err, want) {
			t.Errorf("ReadBytes(%q) error %v; want %v", p, err, want)
		}
	}
	e, err := ReadRef(ctx, s, root, "")
	if err != nil || e.Kind != KindDir || e.Hash != root || e.Size != 11 {
		t.Errorf("ReadRef(root) = %+v, %v; want the root dir of size 11", e, err)
	}
}

// TestDeterministic: the same files make the same root, whatever the order
// and history of the writes.
func TestDeterministic(t *testing.T) {
	s := cas.NewMemory()
	files := []string{"a", "1", "b/c", "2", "b/d/e", "3", "é", "4", "b-", "5"}
	want := build(t, s, files...)
	for range 20 {
		pairs := make([][2]string, 0, len(files)/2)
		for i := 0; i < len(files); i += 2 {
			pairs = append(pairs, [2]string{files[i], files[i+1]})
		}
		rand.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		var order []string
		order = append(order, "tmp/x", "gone") // written and removed again
		for _, p := range pairs {
			order = append(order, p[0], p[1])
		}
		root := build(t, s, order...)
		root, _, err := Remove(t.Context(), s, root, "tmp", true)
		if err != nil {
			t.Fatal(err)
		}
		if root != want {
			t.Fatalf("order %q gives root %s; want %s\n%s", order, root, want, dump(t, s, root))
		}
	}
	if EmptyRootRef != build(t, s) {
		t.Errorf("EmptyRootRef %s differs from the stored empty root", EmptyRootRef)
	}
}

// TestTreeNodes: nodes are canonical sys/WorkspaceTree@2 values, and bad
// nodes are refused.
func TestTreeNodes(t *testing.T) {
	ctx := t.Context()
	s := cas.NewMemory()
	root := build(t, s, "a/b", "x", "c", "y")
	b, err := s.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := cas.CheckCanonical(b); err != nil {
		t.Fatalf("root node is not canonical CBOR: %v", err)
	}
	v, err := schema.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	n, err := schema.Normalize(schema.BuiltinTypes, schema.RefType(TreeSchema), v)
	if err != nil {
		t.Fatalf("root node does not fit %s: %v", TreeSchema, err)
	}
	if !schema.Equal(n, v) {
		t.Fatalf("root node is not in normal form: %s", schema.String(v))
	}
	// The direct encoding is the one of the schema value.
	for _, tr := range []*Tree{{}, {Entries: []Entry{{Name: "a", Kind: KindFile, Hash: cas.Sum(nil), Size: 1 << 40, Mode: ModeExec, Annotations: cas.Sum([]byte("x"))}},
		Annotations: cas.Sum([]byte("y"))}, {Entries: []Entry{{Name: strings.Repeat("é", 100), Kind: KindDir, Hash: root, Size: 300, Mode: ModeDir}}}} {
		got, err := tr.Encode()
		if err != nil {
			t.Fatal(err)
		}
		want, err := schema.Encode(tr.Value())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Encode of %+v:\n% x\nwant\n% x", tr, got, want)
		}
	}
	h := cas.Sum([]byte("x")).String()
	entry := func(name, kind string) schema.Value {
		return schema.Record("name", name, "kind", kind, "hash", h, "size", uint64(1), "mode", ModeFile, "annotations_hash", nil)
	}
	for name, node := range map[string]schema.Value{
		"unsorted":   schema.Record("entries", []schema.Value{entry("b", "file"), entry("a", "file")}, "annotations_hash", nil),
		"duplicate":  schema.Record("entries", []schema.Value{entry("a", "file"), entry("a", "file")}, "annotations_hash", nil),
		"bad kind":   schema.Record("entries", []schema.Value{entry("a", "link")}, "annotations_hash", nil),
		"dotdot":     schema.Record("entries", []schema.Value{entry("..", "file")}, "annotations_hash", nil),
		"slash":      schema.Record("entries", []schema.Value{entry("a/b", "file")}, "annotations_hash", nil),
		"not a tree": schema.Record("files", []schema.Value{}),
		"text":       "hello",
	} {
		b, err := schema.Encode(node)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeTree(b); !errors.Is(err, ErrBadTree) {
			t.Errorf("%s: DecodeTree error %v; want ErrBadTree", name, err)
		}
	}
	if _, err := DecodeTree([]byte("not cbor")); !errors.Is(err, ErrBadTree) {
		t.Errorf("DecodeTree(garbage) error %v; want ErrBadTree", err)
	}
	// A root that is a file blob, not a tree.
	blob, _ := s.Put(ctx, []byte("just a file"))
	if _, err := List(ctx, s, blob, ListOptions{}); !errors.Is(err, ErrBadTree) {
		t.Errorf("List(file blob) error %v; want ErrBadTree", err)
	}
	if _, err := List(ctx, s, cas.Sum([]byte("missing")), ListOptions{}); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("List(missing root) error %v; want cas.ErrNotFound", err)
	}
}

func TestList(t *testing.T) {
	ctx := t.Context()
	s := cas.NewMemory()
	root := build(t, s, "a/b", "1", "a/c/d", "22", "a-c", "333", "e", "4444")
	paths := func(res ListResult) string {
		var ps []string
		for _, e := range res.Entries {
			ps = append(ps, e.Path)
		}
		return strings.Join(ps, " ") + "|" + res.NextCursor
	}
	for _, tc := range []struct {
		opts ListOptions
		want string
	}{
		{ListOptions{}, "a a-c e|"},
		{ListOptions{Recursive: true}, "a a/b a/c a/c/d a-c e|"},
		{ListOptions{Path: "a"}, "a/b a/c|"},
		{ListOptions{Path: "a/", Recursive: true}, "a/b a/c a/c/d|"},
		{ListOptions{Path: "e"}, "e|"},
		{ListOptions{Recursive: true, Limit: 2}, "a a/b|a/b"},
		{ListOptions{Recursive: true, Limit: 2, Cursor: "a/b"}, "a/c a/c/d|a/c/d"},
		{ListOptions{Recursive: true, Limit: 2, Cursor: "a/c/d"}, "a-c e|"},
		{ListOptions{Recursive: true, Cursor: "a/c"}, "a/c/d a-c e|"},
		{ListOptions{Limit: 1, Cursor: "a"}, "a-c|a-c"},
		{ListOptions{Cursor: "zzz"}, "|"},
	} {
		res, err := List(ctx, s, root, tc.opts)
		if err != nil {
			t.Errorf("List(%+v): %v", tc.opts, err)
			continue
		}
		if got := paths(res); got != tc.want {
			t.Errorf("List(%+v) = %s; want %s", tc.opts, got, tc.want)
		}
	}
	// Pages walk the whole tree exactly once.
	var all []string
	cursor := ""
	for {
		res, err := List(ctx, s, root, ListOptions{Recursive: true, Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Entries {
			all = append(all, e.Path)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if got := strings.Join(all, " "); got != "a a/b a/c a/c/d a-c e" {
		t.Errorf("pages of 1: %s", got)
	}
	for p, want := range map[string]error{"nope": ErrNotFound, "e/x": ErrNotDir, "..": ErrInvalidPath} {
		if _, err := List(ctx, s, root, ListOptions{Path: p}); !errors.Is(err, want) {
			t.Errorf("List(%q) error %v; want %v", p, err, want)
		}
	}
	if _, err := List(ctx, s, root, ListOptions{Cursor: "/abs"}); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("List with an absolute cursor: %v; want ErrInvalidPath", err)
	}
}

func TestDiff(t *testing.T) {
	ctx := t.Context()
	s := cas.NewMemory()
	a := build(t, s, "keep", "k", "mod", "1", "gone/x", "x", "gone/y/z", "z", "f2d", "f", "d2f/q", "q")
	b := build(t, s, "keep", "k", "mod", "2", "new/n", "n", "f2d/inner", "i", "d2f", "now a file")
	show := func(cs []Change) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Change+":"+c.Kind+":"+c.Path)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		a, b   cas.Ref
		prefix string
		want   string
	}{
		{a, a, "", ""},
		{a, b, "", "changed:file:d2f removed:file:d2f/q changed:dir:f2d added:file:f2d/inner removed:dir:gone removed:file:gone/x removed:dir:gone/y removed:file:gone/y/z changed:file:mod added:dir:new added:file:new/n"},
		{b, a, "", "changed:dir:d2f added:file:d2f/q changed:file:f2d removed:file:f2d/inner added:dir:gone added:file:gone/x added:dir:gone/y added:file:gone/y/z changed:file:mod removed:dir:new removed:file:new/n"},
		{a, b, "gone", "removed:dir:gone removed:file:gone/x removed:dir:gone/y removed:file:gone/y/z"},
		{a, b, "gone/y/z", "removed:file:gone/y/z"},
		{a, b, "mod", "changed:file:mod"},
		{a, b, "nowhere", ""},
		{EmptyRootRef, b, "", "added:file:d2f added:dir:f2d added:file:f2d/inner added:file:keep added:file:mod added:dir:new added:file:new/n"},
	} {
		cs, err := Diff(ctx, s, tc.a, tc.b, tc.prefix)
		if err != nil {
			t.Fatalf("Diff: %v", err)
		}
		if got := show(cs); got != tc.want {
			t.Errorf("Diff(prefix %q):\n got %s\nwant %s", tc.prefix, got, tc.want)
		}
	}
	// A mode change is a change.
	x := build(t, s, "f", "same")
	y, _, err := WriteBytes(ctx, s, x, "f", []byte("same"), ModeExec)
	if err != nil {
		t.Fatal(err)
	}
	if cs, _ := Diff(ctx, s, x, y, ""); show(cs) != "changed:file:f" {
		t.Errorf("mode change: %s", show(cs))
	}
	if _, err := Diff(ctx, s, a, b, "../x"); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("Diff with prefix ../x: %v; want ErrInvalidPath", err)
	}
}

func TestEdit(t *testing.T) {
	for _, tc := range []struct {
		content, old, new string
		all               bool
		want              string
		n                 int
		err               string
	}{
		{"hello world", "world", "there", false, "hello there", 1, ""},
		{"aaa", "a", "b", true, "bbb", 3, ""},
		{"aaaa", "aa", "b", true, "bb", 2, ""},
		{"aaaa", "aa", "b", false, "", 0, "occurs 2 times (lines 1, 1)"},
		{"x\r\ny\r\n", "y\r\n", "z\n", false, "x\r\nz\n", 1, ""},
		{"ünïcödé", "ï", "i", false, "ünicödé", 1, ""},
		{"line1\nline2\n", "line3", "x", false, "", 0, "old_string not found"},
		{"", "x", "y", false, "", 0, "old_string not found"},
		{"a\nb\na\nb\na", "a\nb", "c", false, "", 0, "occurs 2 times (lines 1, 3)"},
		{"x", "", "y", false, "", 0, "old_string is empty"},
		{"x", "x", "x", false, "", 0, "are the same"},
	} {
		got, n, err := Edit([]byte(tc.content), tc.old, tc.new, tc.all)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Edit(%q, %q, %q) error %v; want %q", tc.content, tc.old, tc.new, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want || n != tc.n {
			t.Errorf("Edit(%q, %q, %q, %v) = %q, %d, %v; want %q, %d", tc.content, tc.old, tc.new, tc.all, got, n, err, tc.want, tc.n)
		}
	}
	// Many matches: the error lists the first 20 lines.
	_, _, err := Edit([]byte(strings.Repeat("x\n", 30)), "x", "y", false)
	ee, ok := errors.AsType[*EditError](err)
	if !ok || ee.Count != 30 || len(ee.Lines) != 20 || ee.Lines[19] != 20 || !strings.Contains(ee.Error(), "19, 20, ...") {
		t.Errorf("30 matches: %v", err)
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"", ".", "a/b", "../x", "/abs", `a\b`, "a\x00", "héllo/../x", "a//b/./c/", "...", "a/..b", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := CleanPath(p)
		if err != nil {
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("CleanPath(%q) error %v does not wrap ErrInvalidPath", p, err)
			}
			return
		}
		if strings.HasPrefix(c, "/") || strings.ContainsAny(c, "\\\x00") || strings.HasSuffix(c, "/") {
			t.Fatalf("CleanPath(%q) = %q", p, c)
		}
		for part := range strings.SplitSeq(c, "/") {
			if c != "" && !validName(part) {
				t.Fatalf("CleanPath(%q) = %q has the component %q", p, c, part)
			}
		}
		if again, err := CleanPath(c); err != nil || again != c {
			t.Fatalf("CleanPath(%q) = %q, but CleanPath(%q) = %q, %v", p, c, c, again, err)
		}
	})
}

func FuzzEdit(f *testing.F) {
	f.Add("hello world", "world", "there", false)
	f.Add("aaaa", "aa", "b", true)
	f.Add("x\ny\nx", "x", "z", false)
	f.Add("ünï", "ï", "", false)
	f.Fuzz(func(t *testing.T, content, old, repl string, all bool) {
		out, n, err := Edit([]byte(content), old, repl, all)
		count := 0
		if old != "" {
			count = strings.Count(content, old)
		}
		if err != nil {
			if old != "" && old != repl && (count == 1 || count > 1 && all) {
				t.Fatalf("Edit failed with %d matches (all %v): %v", count, all, err)
			}
			if ee, ok := errors.AsType[*EditError](err); ok && ee.Count != count {
				t.Fatalf("EditError count %d; want %d", ee.Count, count)
			}
			return
		}
		if n != count || n == 0 || n > 1 && !all {
			t.Fatalf("Edit replaced %d of %d matches (all %v)", n, count, all)
		}
		if want := strings.ReplaceAll(content, old, repl); string(out) != want {
			t.Fatalf("Edit = %q; want %q", out, want)
		}
	})
}

// TestEmptyRootRef: the ref written out is the hash of the empty tree's
// canonical node.
func TestEmptyRootRef(t *testing.T) {
	b, err := (&Tree{}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, emptyTreeBytes()) {
		t.Fatalf("emptyTreeBytes = %x; the empty tree encodes as %x", emptyTreeBytes(), b)
	}
	if got := cas.Sum(b); got != EmptyRootRef {
		t.Fatalf("EmptyRootRef = %s; the empty tree's ref is %s", EmptyRootRef, got)
	}
}
