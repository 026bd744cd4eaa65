package replay_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/demiurge-dev/demiurge/replay"
)

// FuzzRead: a bundle whose bundle.json or journal.cbor is damaged is
// refused with an error, never a panic.
func FuzzRead(f *testing.F) {
	src := filepath.Join("..", "testdata", "sessions", "single-tool")
	js, err := os.ReadFile(filepath.Join(src, "bundle.json"))
	if err != nil {
		f.Fatal(err)
	}
	jc, err := os.ReadFile(filepath.Join(src, "journal.cbor"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(js, jc)
	f.Add(js, jc[:len(jc)/2])
	f.Add([]byte(`{"format": "demiurge/bundle/v1", "world": "w", "head": 0}`), []byte{})
	f.Fuzz(func(t *testing.T, bundleJSON, journal []byte) {
		dir, err := os.MkdirTemp("", "fuzzread")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := os.Mkdir(filepath.Join(dir, "air"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bundle.json"), bundleJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "journal.cbor"), journal, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = replay.Read(dir)
	})
}
