package workspace_test

import (
	"context"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

func ExampleWriteBytes() {
	ctx := context.Background()
	store := cas.NewMemory()
	root, _ := workspace.EmptyRoot(ctx, store)
	root, _, _ = workspace.WriteBytes(ctx, store, root, "src/main.go", []byte("package main\n"), 0)
	next, _, _ := workspace.WriteBytes(ctx, store, root, "README.md", []byte("# demo\n"), 0)

	res, _ := workspace.List(ctx, store, next, workspace.ListOptions{Recursive: true})
	for _, e := range res.Entries {
		fmt.Println(e.Kind, e.Size, e.Path)
	}
	changes, _ := workspace.Diff(ctx, store, root, next, "")
	for _, c := range changes {
		fmt.Println(c.Change, c.Path)
	}
	// Output:
	// file 7 README.md
	// dir 13 src
	// file 13 src/main.go
	// added README.md
}

func ExampleEdit() {
	_, _, err := workspace.Edit([]byte("a := 1\nb := 1\n"), "1", "2", false)
	fmt.Println(err)
	out, n, _ := workspace.Edit([]byte("a := 1\nb := 1\n"), "b := 1", "b := 2", false)
	fmt.Printf("%d %q\n", n, out)
	// Output:
	// old_string occurs 2 times (lines 1, 2); it must occur exactly once
	// 1 "a := 1\nb := 2\n"
}
