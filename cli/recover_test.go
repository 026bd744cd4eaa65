package cli

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// TestRecoverMetaPage: the newer meta page of a store zeroed, every
// command refuses it, naming the page and what would be lost, a writer
// included (it would make the loss permanent); `demiurge recover` keeps a
// copy and goes back to the older state, after which the store is whole
// and lacks only the last commit.
func TestRecoverMetaPage(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	mustRunStore(t, dir, exitOK, "import", damageSession)
	last := "the blob of the last commit\n"
	mustRun(t, exitOK, last, "--store", dir, "cas", "put", "-")
	path := filepath.Join(dir, store.FileName)
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	pageSize := int(ne.Uint32(file[24:]))
	newer := 0
	if ne.Uint64(file[pageSize+16+48:]) > ne.Uint64(file[16+48:]) {
		newer = 1
	}
	clear(file[newer*pageSize : (newer+1)*pageSize])
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"journal", "verify"}, {"trace"}, {"cas", "put", "-"}} {
		r := mustRunStore(t, dir, exitFailure, args...)
		if want := "meta page " + string(rune('0'+newer)) + " is zeroed"; !strings.Contains(r.stderr, want) ||
			!strings.Contains(r.stderr, "the last commit (transaction") || !strings.Contains(r.stderr, "`demiurge recover`") ||
			strings.Contains(r.stderr, "import a bundle") {
			t.Errorf("demiurge %s: stderr:\n%s\nwant it to say %q, what is lost, and to run demiurge recover (only)", strings.Join(args, " "), r.stderr, want)
		}
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, file) {
		t.Fatalf("the commands changed the damaged file (%v)", err)
	}

	r := mustRunStore(t, dir, exitOK, "recover")
	if !strings.Contains(r.stdout, "recovered the store in "+dir+": it goes on from transaction") || !strings.Contains(r.stdout, "meta page") {
		t.Errorf("recover: %s", r.stdout)
	}
	kept, _ := filepath.Glob(path + ".damaged-*")
	if len(kept) != 1 {
		t.Fatalf("copies kept: %v; want one", kept)
	}
	if b, err := os.ReadFile(kept[0]); err != nil || !bytes.Equal(b, file) {
		t.Errorf("the copy kept is not the damaged file (%v)", err)
	}
	mustRunStore(t, dir, exitOK, "journal", "verify")
	mustRunStore(t, dir, exitOK, "cas", "verify")
	if r := mustRunStore(t, dir, exitFailure, "cas", "get", cas.Sum([]byte(last)).String()); !strings.Contains(r.stderr, "not found") {
		t.Errorf("cas get of the lost blob: %s", r.stderr)
	}
	if r := mustRunStore(t, dir, exitOK, "recover"); !strings.Contains(r.stdout, "nothing to recover") {
		t.Errorf("recover again: %s", r.stdout)
	}
}
