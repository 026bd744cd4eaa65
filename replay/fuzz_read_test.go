package replay_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/demiurge-dev/demiurge/replay"
)

// FuzzRead: a bundle whose bundle.json or journal.cbor is damaged is
// refused with an error, never a panic. The bundle is read from memory, so
// the fuzzer runs at full speed (writing files each run stalled it).
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
		fsys := fstest.MapFS{
			"air":          &fstest.MapFile{Mode: os.ModeDir | 0o755},
			"bundle.json":  &fstest.MapFile{Data: bundleJSON},
			"journal.cbor": &fstest.MapFile{Data: journal},
		}
		_, _ = replay.ReadFS(fsys, "fuzz")
	})
}
