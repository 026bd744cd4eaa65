package workspace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// treeOf builds a tree from "path=content" files and "path/" directories.
func treeOf(t *testing.T, s Store, spec ...string) cas.Ref {
	t.Helper()
	ctx := context.Background()
	root, err := EmptyRoot(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range spec {
		if dir, ok := strings.CutSuffix(f, "/"); ok {
			root, err = update(ctx, s, root, dir, true, func(old *Entry) (*Entry, error) {
				ref, _ := PutTree(ctx, s, &Tree{})
				return &Entry{Kind: KindDir, Hash: ref, Mode: ModeDir}, nil
			})
		} else {
			p, content, _ := strings.Cut(f, "=")
			root, _, err = WriteBytes(ctx, s, root, p, []byte(content), 0)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// dumpFiles lists a tree as "path=content" and "path/" lines, in walk order.
func dumpFiles(t *testing.T, s Store, root cas.Ref) []string {
	t.Helper()
	ctx := context.Background()
	res, err := List(ctx, s, root, ListOptions{Recursive: true, Limit: MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range res.Entries {
		if e.Kind == KindDir {
			out = append(out, e.Path+"/")
			continue
		}
		b, _, err := ReadBytes(ctx, s, root, e.Path, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%s", e.Path, b))
	}
	return out
}

func TestApply(t *testing.T) {
	s := cas.NewMemory()
	ctx := context.Background()
	for _, tc := range []struct {
		name           string
		base, from, to []string
		want           []string
	}{
		{"base is from", []string{"a=1"}, []string{"a=1"}, []string{"a=2", "b=3"}, []string{"a=2", "b=3"}},
		{"other paths survive", []string{"a=1", "other=x"}, []string{"a=1"}, []string{"a=2", "new=3"}, []string{"a=2", "new=3", "other=x"}},
		{"same path: later wins", []string{"a=theirs"}, []string{"a=1"}, []string{"a=mine"}, []string{"a=mine"}},
		{"removed", []string{"a=1", "b=2", "c=9"}, []string{"a=1", "b=2"}, []string{"b=2"}, []string{"b=2", "c=9"}},
		{"removed there too", []string{"b=2"}, []string{"a=1", "b=2"}, []string{"b=2"}, []string{"b=2"}},
		{"new dir whole", []string{"x=1"}, nil, []string{"d/e/f=1", "d/g=2"}, []string{"d/", "d/e/", "d/e/f=1", "d/g=2", "x=1"}},
		{"dir both made merges", []string{"d/theirs=1"}, nil, []string{"d/mine=2"}, []string{"d/", "d/mine=2", "d/theirs=1"}},
		{"moved dir", []string{"src/a=1", "src/b=2", "top=t"}, []string{"src/a=1", "src/b=2"}, []string{"lib/a=1", "lib/b=2"}, []string{"lib/", "lib/a=1", "lib/b=2", "top=t"}},
		{"file where dir goes", []string{"d=file"}, nil, []string{"d/x=1"}, []string{"d/", "d/x=1"}},
		{"unchanged", []string{"z=1"}, []string{"a=1"}, []string{"a=1"}, []string{"z=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Apply(ctx, s, treeOf(t, s, tc.base...), treeOf(t, s, tc.from...), treeOf(t, s, tc.to...))
			if err != nil {
				t.Fatal(err)
			}
			if d := dumpFiles(t, s, got); !slices.Equal(d, tc.want) {
				t.Errorf("got %q; want %q", d, tc.want)
			}
		})
	}
}
