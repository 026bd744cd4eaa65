package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/castest"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/replay"
)

// This file holds the storage-damage matrix: a small store is damaged in
// every way a disk or a copy can damage it (each page zeroed in turn, the
// file cut at each page boundary, a byte flipped in each record and each
// blob) and every command that reads it is run on each damaged copy. None
// may panic or fault (either would end the test binary), show damaged data
// as good, or write the store: each ends with the output it gives on the
// undamaged store, or exits 1 with a message that names the damage.

// damageSession is the recorded session the damaged stores hold.
const damageSession = "../testdata/sessions/demo"

// damageMessage is what the output of a command that failed on a damaged
// store must say.
var damageMessage = regexp.MustCompile(`is damaged|corrupt|hash chain broken|cut short|empty store file`)

// damageFixture is the undamaged store, and what each reading command
// prints from it.
type damageFixture struct {
	file     []byte // the store's file, up to its high-water mark
	pageSize int
	pages    int
	free     map[int]bool // the pages bbolt's freelist holds, in use by nothing
	records  [][]byte     // the encoded records of world main
	blobs    map[cas.Ref][]byte
	commands [][]string // each reading command, after --store DIR
	want     []string   // what each prints on the undamaged store
}

// newDamageFixture imports the session into a new store and runs every
// reading command on it.
func newDamageFixture(t *testing.T) *damageFixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	mustRunStore(t, dir, exitOK, "import", damageSession)
	b, err := replay.Read(damageSession)
	if err != nil {
		t.Fatal(err)
	}
	fx := &damageFixture{blobs: b.Blobs}
	for _, r := range b.Records {
		enc, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		fx.records = append(fx.records, enc)
	}
	// A blob big enough for a bucket of its own, over several pages.
	var text strings.Builder
	for i := 0; text.Len() < 3*castest.BoltBlobBucketMin; i++ {
		fmt.Fprintf(&text, "line %d of a big blob\n", i)
	}
	big := cas.Sum([]byte(text.String()))
	mustRun(t, exitOK, text.String(), "--store", dir, "cas", "put", "-")
	fx.blobs[big] = []byte(text.String())
	manifest := filepath.Join("..", "examples", "demiurge")
	fx.commands = [][]string{
		{"journal", "verify"},
		{"journal", "dump", "--world", "main"},
		{"cas", "verify"},
		{"cas", "get", big.String()},
		{"cas", "stat", big.String()},
		{"state"},
		{"trace"},
		{"replay", "--manifest", manifest, "--from-genesis"},
		{"export", "--manifest", filepath.Join(damageSession, "air"), "BUNDLE"}, // the AIR the world ran
		{"workspace", "ls", "--recursive"},
		{"workspace", "cat", "notes/hello.md"},
	}
	for _, args := range fx.commands {
		r := fx.run(t, dir, args)
		if r.code != exitOK {
			t.Fatalf("demiurge %q on the undamaged store: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		fx.want = append(fx.want, r.stdout)
	}
	file, err := os.ReadFile(filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// The meta page of the newest transaction says how much of the file is
	// in use (page header 16 bytes; page size at 24, high-water mark at 56,
	// txid at 64).
	ne := binary.NativeEndian
	fx.pageSize = int(ne.Uint32(file[24:]))
	m := file[16:]
	if m1 := file[fx.pageSize+16:]; ne.Uint64(m1[48:]) > ne.Uint64(m[48:]) {
		m = m1
	}
	fx.pages = int(ne.Uint64(m[40:]))
	fx.file = file[:fx.pages*fx.pageSize] // the rest is room to grow, never read
	db, err := bbolt.Open(filepath.Join(dir, store.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin(true) // Tx.Page needs the freelist a writer loads
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	fx.free = map[int]bool{}
	for id := range fx.pages {
		if p, err := tx.Page(id); err != nil || p == nil {
			t.Fatalf("page %d: %v, %v", id, p, err)
		} else if p.Type == "free" {
			fx.free[id] = true
		}
	}
	return fx
}

// mustRunStore runs a command on the store in dir and fails the test
// unless it exits with want.
func mustRunStore(t *testing.T, dir string, want int, args ...string) result {
	t.Helper()
	return mustRun(t, want, "", append([]string{"--store", dir}, args...)...)
}

// run runs a command on the store in dir; a BUNDLE argument becomes a new
// directory, which the output names as BUNDLE.
func (fx *damageFixture) run(t *testing.T, dir string, args []string) result {
	t.Helper()
	bundle := filepath.Join(t.TempDir(), "bundle")
	full := []string{"--store", dir}
	for _, a := range args {
		if a == "BUNDLE" {
			a = bundle
		}
		full = append(full, a)
	}
	var out, errOut bytes.Buffer
	code := execute(context.Background(), full, stdio{in: strings.NewReader(""), out: &out, err: &errOut},
		func(string) string { return "" })
	return result{stdout: strings.ReplaceAll(out.String(), bundle, "BUNDLE"), stderr: errOut.String(), code: code}
}

// check writes file as a store, runs every reading command on it, and
// returns their exit codes.
func (fx *damageFixture) check(t *testing.T, what string, file []byte) (codes []int) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, store.FileName)
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, args := range fx.commands {
		r := fx.run(t, dir, args)
		codes = append(codes, r.code)
		switch {
		case r.code == exitOK && r.stdout != fx.want[i]:
			t.Errorf("%s: demiurge %s exited 0 with an output that differs from the undamaged store's:\n%s\nwant:\n%s",
				what, strings.Join(args, " "), r.stdout, fx.want[i])
		case r.code == exitFailure && !damageMessage.MatchString(r.stdout+r.stderr):
			t.Errorf("%s: demiurge %s exited 1 without naming the damage:\n%s%s", what, strings.Join(args, " "), r.stdout, r.stderr)
		case r.code != exitOK && r.code != exitFailure:
			t.Errorf("%s: demiurge %s exited %d; want 0 or 1\n%s%s", what, strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, file) {
		t.Errorf("%s: the reading commands changed the store's file (%v)", what, err)
	}
	return codes
}

// code returns the exit code of the command named name among codes.
func (fx *damageFixture) code(codes []int, name ...string) int {
	for i, args := range fx.commands {
		if len(args) >= len(name) && slices.Equal(args[:len(name)], name) {
			return codes[i]
		}
	}
	panic(fmt.Sprintf("no command %q", name))
}

// flipped returns a copy of the file with a byte in the middle of every
// copy of b changed (freed pages may hold old copies), and how many
// copies it found.
func (fx *damageFixture) flipped(b []byte) ([]byte, int) {
	file := bytes.Clone(fx.file)
	n := 0
	for off := 0; ; {
		i := bytes.Index(file[off:], b)
		if i < 0 {
			return file, n
		}
		file[off+i+len(b)/2] ^= 0x10
		off += i + len(b)
		n++
	}
}

func TestStorageDamage(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("some thousand runs of the commands: slow under the race detector, and they run in one goroutine; the packages they rest on (cas, journal, internal/store) have damage tests of their own")
	}
	fx := newDamageFixture(t)
	t.Logf("a store of %d pages (%d free), %d records, %d blobs; %d reading commands", fx.pages, len(fx.free), len(fx.records), len(fx.blobs), len(fx.commands))
	t.Run("zeroed page", func(t *testing.T) {
		t.Parallel()
		for page := 2; page < fx.pages; page++ { // 0 and 1 are the meta pages, which bbolt checks
			file := bytes.Clone(fx.file)
			clear(file[page*fx.pageSize : (page+1)*fx.pageSize])
			what := fmt.Sprintf("page %d zeroed", page)
			codes := fx.check(t, what, file)
			// A free page is read by nothing; cas verify reads every
			// other (each page of the tree, each blob's bytes).
			if fx.free[page] && slices.Contains(codes, exitFailure) {
				t.Errorf("%s: a free page, yet commands failed: %v", what, codes)
			}
			if !fx.free[page] && fx.code(codes, "cas", "verify") != exitFailure {
				t.Errorf("%s: cas verify did not notice", what)
			}
		}
	})
	t.Run("meta page zeroed", func(t *testing.T) {
		t.Parallel()
		// bbolt falls back to the other meta page, an older state of the
		// file, without a word: every command must refuse instead, the
		// newer page's loss (the last commit) and the older's alike.
		for page := range 2 {
			file := bytes.Clone(fx.file)
			clear(file[page*fx.pageSize : (page+1)*fx.pageSize])
			what := fmt.Sprintf("meta page %d zeroed", page)
			if codes := fx.check(t, what, file); slices.Contains(codes, exitOK) {
				t.Errorf("%s: exit codes %v; want every command refused", what, codes)
			}
		}
	})
	t.Run("cut short", func(t *testing.T) {
		t.Parallel()
		for page := 0; page <= fx.pages; page++ {
			codes := fx.check(t, fmt.Sprintf("cut after %d pages", page), fx.file[:page*fx.pageSize])
			if page < fx.pages && slices.Contains(codes, exitOK) || page == fx.pages && slices.Contains(codes, exitFailure) {
				t.Errorf("cut after %d pages of %d: exit codes %v; want every command refused before the end, none after", page, fx.pages, codes)
			}
		}
	})
	t.Run("record flipped", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("-short: the records of one world are checked by package journal")
		}
		for i, rec := range fx.records {
			file, n := fx.flipped(rec)
			if n == 0 {
				t.Fatalf("record %d not found in the file", i+1)
			}
			what := fmt.Sprintf("record %d flipped", i+1)
			if codes := fx.check(t, what, file); fx.code(codes, "journal", "verify") != exitFailure {
				t.Errorf("%s: journal verify did not notice", what)
			}
		}
	})
	t.Run("blob flipped", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("-short: blobs are checked by package cas")
		}
		for ref, blob := range fx.blobs {
			if len(blob) < 16 {
				continue // too short to be found only where it is stored
			}
			file, n := fx.flipped(blob)
			if n == 0 && len(blob) < castest.BoltBlobBucketMin {
				t.Fatalf("blob %s not found in the file", ref.Short())
			}
			if n == 0 { // a big blob spans pages: flip its first bytes
				file, n = fx.flipped(blob[:512])
			}
			if n == 0 {
				t.Fatalf("blob %s not found in the file", ref.Short())
			}
			what := fmt.Sprintf("blob %s flipped", ref.Short())
			if codes := fx.check(t, what, file); fx.code(codes, "cas", "verify") != exitFailure {
				t.Errorf("%s: cas verify did not notice", what)
			}
		}
	})
}

// TestDamagedBundle: a bundle whose blob was altered is refused, naming
// the blob, and not taken for a damaged store.
func TestDamagedBundle(t *testing.T) {
	t.Parallel()
	bundle := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(bundle, os.DirFS(damageSession)); err != nil {
		t.Fatal(err)
	}
	blobs, err := filepath.Glob(filepath.Join(bundle, "blobs", "*"))
	if err != nil || len(blobs) == 0 {
		t.Fatalf("no blobs in %s: %v", bundle, err)
	}
	b, err := os.ReadFile(blobs[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(blobs[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"trace", bundle}, {"replay", bundle}, {"import", bundle}} {
		r := mustRun(t, exitFailure, "", append([]string{"--store", filepath.Join(t.TempDir(), "store")}, args...)...)
		if !strings.Contains(r.stderr, "read bundle "+bundle+": blob "+filepath.Base(blobs[0])+": cas: corrupt blob") || strings.Contains(r.stderr, "the store in") {
			t.Errorf("demiurge %s: %s", strings.Join(args, " "), r.stderr)
		}
	}
}

// helperDamage damages a store's file below bbolt, as a failing disk or a
// bad copy would:
//
//	demiurge-damage DIR empty         cut the file to 0 bytes
//	demiurge-damage DIR cut PAGES     cut the file after PAGES pages
//	demiurge-damage DIR zero-blob REF N
//	                                  zero the Nth page (from 0) of those
//	                                  the bytes of blob REF are on
func helperDamage(ctx context.Context, args []string) error {
	if len(args) < 2 {
		return errors.New("usage: demiurge-damage DIR empty|cut PAGES|zero-blob REF N")
	}
	path := filepath.Join(args[0], store.FileName)
	file, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(file) < 28 {
		return fmt.Errorf("%s is not a bbolt file", path)
	}
	pageSize := int(binary.NativeEndian.Uint32(file[24:])) // in meta page 0, after the page header, magic and version
	switch args[1] {
	case "empty":
		return os.Truncate(path, 0)
	case "cut":
		n, err := strconv.Atoi(args[len(args)-1])
		if err != nil || len(args) != 3 {
			return fmt.Errorf("cut PAGES: %v", err)
		}
		return os.Truncate(path, int64(n*pageSize))
	case "zero-blob":
		if len(args) != 4 {
			return errors.New("zero-blob REF N")
		}
		ref, err := cas.ParseRef(args[2])
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(args[3])
		if err != nil {
			return err
		}
		s, err := store.Open(args[0], &store.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		blob, err := s.CAS().Get(ctx, ref)
		s.Close()
		if err != nil {
			return err
		}
		i := bytes.Index(file, blob)
		if i < 0 {
			return fmt.Errorf("the bytes of %s are not in one piece in %s", ref, path)
		}
		first, last := i/pageSize, (i+len(blob)-1)/pageSize
		if first+n > last {
			return fmt.Errorf("blob %s is on pages %d to %d: there is no page %d of them", ref, first, last, n)
		}
		page := first + n
		clear(file[page*pageSize : (page+1)*pageSize])
		return os.WriteFile(path, file, 0o600)
	}
	return fmt.Errorf("unknown damage %q", args[1])
}
