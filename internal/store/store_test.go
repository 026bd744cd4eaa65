package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas/castest"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// mustOpen opens a store and closes it when the test ends.
func mustOpen(t *testing.T, dir string, opts *Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s, %+v): %v", dir, opts, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestOpenCreatesAndReopens(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "a", "store")
	s, err := Open(dir, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.ReadOnly() {
		t.Error("ReadOnly() = true for a read-write store")
	}
	if got, want := s.Path(), filepath.Join(dir, FileName); got != want {
		t.Errorf("Path() = %q; want %q", got, want)
	}
	ref, err := s.CAS().Put(ctx, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	head, err := s.Journal().Append(ctx, "w1", journal.Head{}, []journal.Entry{{Kind: "Note", Payload: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o700 {
		t.Errorf("store dir mode = %v; want 0700", perm)
	}

	r := mustOpen(t, dir, &Options{ReadOnly: true})
	if !r.ReadOnly() {
		t.Error("ReadOnly() = false for a read-only store")
	}
	got, err := r.CAS().Get(ctx, ref)
	if err != nil || string(got) != "hello" {
		t.Errorf("Get = %q, %v; want %q", got, err, "hello")
	}
	h, err := r.Journal().Head(ctx, "w1")
	if err != nil || h != head {
		t.Errorf("Head = %v, %v; want %v", h, err, head)
	}
	if _, err := r.CAS().Put(ctx, []byte("more")); !errors.Is(err, cas.ErrReadOnly) {
		t.Errorf("Put on a read-only store: %v; want cas.ErrReadOnly", err)
	}
	if _, err := r.Journal().Append(ctx, "w1", head, []journal.Entry{{Kind: "Note"}}); !errors.Is(err, journal.ErrReadOnly) {
		t.Errorf("Append on a read-only store: %v; want journal.ErrReadOnly", err)
	}
}

func TestReadOnlyMissing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
	}{
		{"no dir", func(string) error { return nil }},
		{"empty dir", func(dir string) error { return os.Mkdir(dir, 0o700) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadDir(filepath.Dir(dir))
			_, err := Open(dir, &Options{ReadOnly: true})
			if !errors.Is(err, ErrNotExist) {
				t.Fatalf("Open read-only: %v; want ErrNotExist", err)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the directory", err)
			}
			after, _ := os.ReadDir(filepath.Dir(dir))
			if len(before) != len(after) {
				t.Errorf("read-only Open created something: %v -> %v", before, after)
			}
			if _, err := os.Stat(filepath.Join(dir, FileName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("read-only Open created the file: %v", err)
			}
		})
	}
}

func TestReadOnlyLeavesFileUnchanged(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := s.CAS().Put(ctx, []byte("blob"))
	if _, err := s.Journal().Append(ctx, "w", journal.Head{}, []journal.Entry{{Kind: "K", Payload: []byte{1}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	r, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CAS().Get(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Verify(ctx, r.Journal(), "w"); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("a read-only Open changed the file's bytes")
	}
	st, _ := os.Stat(path)
	if !st.ModTime().Equal(old) {
		t.Errorf("mtime changed: %v; want %v", st.ModTime(), old)
	}
}

// holderEnv names the store a test binary started with it holds open, as
// another process (see TestMain).
const holderEnv = "DEMIURGE_TEST_HOLD"

// holdElsewhere opens the store in dir in another process (read-only if
// ro) and returns once it holds it; the process ends with the test.
func holdElsewhere(t *testing.T, dir string, ro bool) {
	t.Helper()
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("the holder process is the test binary's TestMain, which is built on unix only")
	}
	v := dir
	if ro {
		v += ",ro"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+v)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("the holder process: %q, %v", line, err)
	}
}

// TestLocked: a store open in one place cannot be opened read-write in
// another, nor read-only beside a writer, whether the other open is in
// another process (the file lock, after LockTimeout) or in this one (at
// once, saying so: the lock would wait for it as for another process).
func TestLocked(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second bool // ReadOnly of the first and second Open
		wantLocked    bool
	}{
		{"writer excludes writer", false, false, true},
		{"writer excludes reader", false, true, true},
		{"reader excludes writer", true, false, true},
		{"readers share", true, true, false},
	} {
		for _, elsewhere := range []bool{false, true} {
			name, want := tc.name+"/this process", []string{"this process", "close it first"}
			if elsewhere {
				// A writer serves the store: it says who it is. A reader
				// does not: the error lists who it may be.
				name, want = tc.name+"/another process", []string{"open store ", "another process (a demiurge run, serve, ui or worker"}
				if !tc.first {
					want = []string{"open store ", "is held by " + filepath.Base(os.Args[0]) + " (pid "}
				}
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				if err := closeNew(dir); err != nil {
					t.Fatal(err)
				}
				if elsewhere {
					holdElsewhere(t, dir, tc.first)
				} else {
					mustOpen(t, dir, &Options{ReadOnly: tc.first})
				}
				s, err := Open(dir, &Options{ReadOnly: tc.second, LockTimeout: 50 * time.Millisecond})
				if !tc.wantLocked {
					if err != nil {
						t.Fatalf("second Open: %v", err)
					}
					_ = s.Close()
					return
				}
				if !errors.Is(err, ErrLocked) {
					t.Fatalf("second Open: %v; want ErrLocked", err)
				}
				for _, want := range append(want, dir) {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
			})
		}
	}
	// An open of this process that closes meanwhile is waited for, as
	// another process's would be.
	for _, first := range []bool{true, false} {
		dir := t.TempDir()
		if err := closeNew(dir); err != nil {
			t.Fatal(err)
		}
		held, err := Open(dir, &Options{ReadOnly: first})
		if err != nil {
			t.Fatal(err)
		}
		opened := make(chan error, 1)
		go func() {
			s, err := Open(dir, &Options{LockTimeout: time.Minute})
			if err == nil {
				s.Close()
			}
			opened <- err
		}()
		// Close once the Open above has begun to wait (if it refused at
		// once instead, it has said so by then).
		time.Sleep(50 * time.Millisecond)
		held.Close()
		if err := <-opened; err != nil {
			t.Errorf("Open while this process's open (read-only %v) closes: %v", first, err)
		}
	}
	// Closed, an open of this process no longer holds the store.
	dir := t.TempDir()
	mustOpen(t, dir, nil).Close()
	if s, err := Open(dir, &Options{LockTimeout: 50 * time.Millisecond}); err != nil {
		t.Fatalf("Open after Close: %v", err)
	} else {
		s.Close()
	}
}

// TestLockReleasedOnClose checks that Close releases the lock.
func TestLockReleasedOnClose(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, dir, &Options{LockTimeout: 50 * time.Millisecond})
}

// TestOneTransaction checks what the store exists for: a step's journal
// records and CAS blobs commit in one bbolt transaction, or neither does.
func TestOneTransaction(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	// A small blob is a value of the CAS bucket, a big one a nested bucket
	// of its own (see cas/internal/boltlayout): both commit with the step.
	blobs := [][]byte{[]byte("step blob"), bytes.Repeat([]byte("big step blob "), 1<<16)}
	var refs []cas.Ref
	head, err := s.Journal().AppendWith(ctx, "w", journal.Head{}, []journal.Entry{{Kind: "Step"}}, func(tx *bbolt.Tx) error {
		for _, b := range blobs {
			ref, err := s.CAS().PutTx(tx, b)
			if err != nil {
				return err
			}
			refs = append(refs, ref)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, ref := range refs {
		if got, err := s.CAS().Get(ctx, ref); err != nil || !bytes.Equal(got, blobs[i]) {
			t.Errorf("Get(%v) = %d bytes, %v after a committed AppendWith; want %d bytes", ref, len(got), err, len(blobs[i]))
		}
	}

	boom := errors.New("boom")
	others := [][]byte{[]byte("never stored"), bytes.Repeat([]byte("big blob never stored "), 1<<16)}
	_, err = s.Journal().AppendWith(ctx, "w", head, []journal.Entry{{Kind: "Step"}}, func(tx *bbolt.Tx) error {
		for _, b := range others {
			if _, err := s.CAS().PutTx(tx, b); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("AppendWith: %v; want %v", err, boom)
	}
	for _, b := range others {
		if ok, _ := s.CAS().Has(ctx, cas.Sum(b)); ok {
			t.Errorf("the %d-byte blob of a failed step was stored", len(b))
		}
	}
	if h, _ := s.Journal().Head(ctx, "w"); h != head {
		t.Errorf("head after a failed step = %v; want %v", h, head)
	}
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := t.TempDir()
	if err := os.WriteFile(filepath.Join(notDB, FileName), bytes.Repeat([]byte("not a bbolt file "), 512), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dir  string
		opts *Options
		want string
	}{
		{"empty dir name", "", nil, "empty directory name"},
		{"negative timeout", t.TempDir(), &Options{LockTimeout: -1}, "LockTimeout"},
		{"read-only no-sync", t.TempDir(), &Options{ReadOnly: true, NoSync: true}, "NoSync"},
		{"dir is a file", file, nil, file},
		{"not a bbolt file", notDB, nil, notDB},
		{"not a bbolt file read-only", notDB, &Options{ReadOnly: true}, notDB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.dir, tc.opts)
			if err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded; want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// closeNew creates a store in dir and closes it.
func closeNew(dir string) error {
	s, err := Open(dir, nil)
	if err != nil {
		return err
	}
	return s.Close()
}

// TestPutWhileReading: the file is opened with cas.TuneBolt's mapping, so
// a commit that grows it does not wait for a read transaction another
// goroutine holds open.
func TestPutWhileReading(t *testing.T) {
	s := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	castest.PutsWhileReading(t, s.DB(), s.CAS())
}

// TestOpenDamaged: a store file that is empty, cut short, or whose root
// page is damaged is refused, read-only or read-write, with an error that
// names the file and says what is wrong, and left as it is.
func TestOpenDamaged(t *testing.T) {
	good := t.TempDir()
	s := mustOpen(t, good, &Options{NoSync: true})
	if _, err := s.CAS().Put(t.Context(), bytes.Repeat([]byte("blob "), 5000)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Journal().Append(t.Context(), "w", journal.Head{}, []journal.Entry{{Kind: "A"}}); err != nil {
		t.Fatal(err)
	}
	pageSize := s.DB().Info().PageSize
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(filepath.Join(good, FileName))
	if err != nil {
		t.Fatal(err)
	}
	// The root bucket's page, which every open reads: in the meta page of
	// the newest transaction (page header 16 bytes, then magic, version,
	// page size, flags, root page id; txid at 64).
	m := orig[16:]
	if m1 := orig[pageSize+16:]; binary.NativeEndian.Uint64(m1[48:]) > binary.NativeEndian.Uint64(m[48:]) {
		m = m1
	}
	root := int(binary.NativeEndian.Uint64(m[16:]))
	newer := 0
	if &m[0] != &orig[16] {
		newer = 1
	}
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		is     error
		want   string
	}{
		{"empty", func(b []byte) []byte { return nil }, cas.ErrEmptyFile, "empty store file .*demiurge.db .*restore it, or remove it to start over"},
		{"cut to the meta pages", func(b []byte) []byte { return b[:2*pageSize] }, cas.ErrCorrupt, "demiurge.db is damaged at page 2: the file is 8192 bytes, but its meta page .* says it holds [0-9]+ pages .*cut short"},
		{"cut to one byte", func(b []byte) []byte { return b[:1] }, cas.ErrCorrupt, "demiurge.db is damaged: neither of its meta pages"},
		{"root page zeroed", func(b []byte) []byte {
			clear(b[root*pageSize : (root+1)*pageSize])
			return b
		}, cas.ErrCorrupt, fmt.Sprintf(`demiurge.db is damaged at page %d: bbolt: assertion failed: Page expected to be: %d, but self identifies as 0`, root, root)},
		// bbolt would go back to the older meta page without a word.
		{"newer meta page zeroed", func(b []byte) []byte {
			clear(b[newer*pageSize : (newer+1)*pageSize])
			return b
		}, cas.ErrMetaDamaged, fmt.Sprintf("demiurge.db is damaged at page %d: meta page %d is zeroed, .* the last commit \\(transaction .*run `demiurge recover`", newer, newer)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bad := tc.damage(bytes.Clone(orig))
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{true, false} {
				s, err := Open(dir, &Options{ReadOnly: ro})
				if err == nil {
					s.Close()
					t.Fatalf("read-only %v: Open succeeded", ro)
				}
				if !errors.Is(err, tc.is) || !regexp.MustCompile(tc.want).MatchString(err.Error()) || strings.Contains(err.Error(), "bad file descriptor") {
					t.Errorf("read-only %v: %v; want %v matching %q", ro, err, tc.is, tc.want)
				}
				if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, bad) {
					t.Errorf("read-only %v: the file changed (%d bytes, was %d): %v", ro, len(after), len(bad), err)
				}
			}
		})
	}
}
