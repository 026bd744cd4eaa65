package workspace

import (
	"context"
	"fmt"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// benchTree is a tree of 1000 files of 1 KiB in 10 directories.
func benchTree(b *testing.B, s Store) cas.Ref {
	var files []string
	content := string(make([]byte, 1024))
	for i := range 1000 {
		files = append(files, fmt.Sprintf("dir%d/file%04d.txt", i%10, i), content)
	}
	return build(b, s, files...)
}

// BenchmarkWriteBytes writes one 1 KiB file into a tree of 1000 files
// (a new root each time), beside the floor: putting the blob alone.
func BenchmarkWriteBytes(b *testing.B) {
	ctx := context.Background()
	data := make([]byte, 1024)
	b.Run("put-blob-only", func(b *testing.B) {
		s := cas.NewMemory()
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for i := 0; b.Loop(); i++ {
			data[0], data[1] = byte(i), byte(i>>8)
			if _, err := s.Put(ctx, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write-in-1000-file-tree", func(b *testing.B) {
		s := cas.NewMemory()
		root := benchTree(b, s)
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for i := 0; b.Loop(); i++ {
			data[0], data[1] = byte(i), byte(i>>8)
			if _, _, err := WriteBytes(ctx, s, root, fmt.Sprintf("dir%d/file%04d.txt", i%10, i%1000), data, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write-in-1000-file-tree-cached", func(b *testing.B) {
		s := NewCachingStore(cas.NewMemory(), 0)
		root := benchTree(b, s)
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for i := 0; b.Loop(); i++ {
			data[0], data[1] = byte(i), byte(i>>8)
			if _, _, err := WriteBytes(ctx, s, root, fmt.Sprintf("dir%d/file%04d.txt", i%10, i%1000), data, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRead reads one file of a tree of 1000 files, beside the floor:
// getting the blob alone.
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	s := cas.NewMemory()
	root := benchTree(b, s)
	e, err := ReadRef(ctx, s, root, "dir3/file0503.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("get-blob-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, e.Hash); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read-in-1000-file-tree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ReadBytes(ctx, s, root, "dir3/file0503.txt", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read-in-1000-file-tree-cached", func(b *testing.B) {
		cs := NewCachingStore(s, 0)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ReadBytes(ctx, cs, root, "dir3/file0503.txt", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
