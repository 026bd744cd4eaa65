package replay_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/replay"
)

// FuzzRead: a bundle whose bundle.json or journal.cbor is damaged is
// refused with an error, never a panic. The bundle is read from memory.
//
// The seeds are short: the first records of a recorded session, with a
// bundle.json naming their head. Run it with a bounded minimization:
//
//	go test ./replay -run '^$' -fuzz FuzzRead -fuzzminimizetime 100x
//
// With the default (60 s for each new interesting input) the fuzzer
// spends its time minimizing, slowly and reporting 0 execs/sec (Go issues
// #48820, #51484); each exec itself takes ~10 µs.
func FuzzRead(f *testing.F) {
	src := filepath.Join("..", "testdata", "sessions", "single-tool")
	jc, err := os.ReadFile(filepath.Join(src, "journal.cbor"))
	if err != nil {
		f.Fatal(err)
	}
	var prefix []byte
	n := 0
	for r, err := range journal.DecodeRecords(jc) {
		if err != nil {
			f.Fatal(err)
		}
		b, err := r.Encode()
		if err != nil {
			f.Fatal(err)
		}
		prefix, n = append(prefix, b...), n+1
		bundle := fmt.Appendf(nil, `{"format": "demiurge/bundle/v1", "world": "main", "head": %d, "head_hash": %q}`, n, r.Hash)
		f.Add(bundle, append([]byte(nil), prefix...))
		if n == 3 {
			f.Add(bundle, prefix[:len(prefix)/2])
			break
		}
	}
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
