package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/castest"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
)

// This file holds what the unit tests and the testscript helper commands
// (main_test.go) share: ways to fill and damage a store.

// result is what one in-process run of the command line gave.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the command line args in-process with stdin and the
// environment env, and returns what it printed and its exit code.
func run(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(t.Context(), args, stdio{in: strings.NewReader(stdin), out: &out, err: &errOut},
		func(k string) string { return env[k] })
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// mustRun is run that fails the test unless the exit code is want.
func mustRun(t *testing.T, want int, stdin string, args ...string) result {
	t.Helper()
	r := run(t, nil, stdin, args...)
	if r.code != want {
		t.Fatalf("demiurge %q: exit %d; want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, want, r.stdout, r.stderr)
	}
	return r
}

// requireStoreUnchanged calls fn and fails the test if the store file in
// dir changed in bytes or mtime meanwhile (bbolt's cmd does the same with
// requireDBNoChange).
func requireStoreUnchanged(t *testing.T, dir string, fn func()) {
	t.Helper()
	path := filepath.Join(dir, store.FileName)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fn()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the store file %s changed", path)
	}
	if st, err := os.Stat(path); err != nil || !st.ModTime().Equal(old) {
		t.Errorf("the store file's mtime changed: %v, %v; want %v", st.ModTime(), err, old)
	}
}

// newStore creates a store in a temporary directory holding blobs and
// the records of world "w", and returns its directory.
func newStore(t *testing.T, blobs ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := store.Open(dir, &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if _, err := s.CAS().Put(t.Context(), []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// jsonToCBOR encodes a JSON document as a canonical CBOR node. Integers
// stay integers; JSON numbers with a fraction or exponent are refused,
// as AIR has no floats.
func jsonToCBOR(js string) ([]byte, error) {
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("payload %s: %w", js, err)
	}
	v, err := fromJSON(v)
	if err != nil {
		return nil, fmt.Errorf("payload %s: %w", js, err)
	}
	return cas.Marshal(v)
}

func fromJSON(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		var u uint64
		if _, err := fmt.Sscan(v.String(), &u); err == nil && fmt.Sprint(u) == v.String() {
			return u, nil
		}
		return nil, fmt.Errorf("number %s is not an integer", v)
	case []any:
		for i, e := range v {
			var err error
			if v[i], err = fromJSON(e); err != nil {
				return nil, err
			}
		}
		return v, nil
	case map[string]any:
		for k, e := range v {
			var err error
			if v[k], err = fromJSON(e); err != nil {
				return nil, err
			}
		}
		return v, nil
	default:
		return v, nil
	}
}

// parseEntries reads KIND PAYLOAD pairs: a payload "raw:TEXT" is the
// bytes of TEXT, "" is empty, anything else is JSON stored as CBOR.
func parseEntries(args []string) ([]journal.Entry, error) {
	if len(args)%2 != 0 {
		return nil, fmt.Errorf("want KIND PAYLOAD pairs, got %d arguments", len(args))
	}
	var entries []journal.Entry
	for i := 0; i < len(args); i += 2 {
		e := journal.Entry{Kind: args[i]}
		switch p := args[i+1]; {
		case p == "":
		case strings.HasPrefix(p, "raw:"):
			e.Payload = []byte(strings.TrimPrefix(p, "raw:"))
		default:
			b, err := jsonToCBOR(p)
			if err != nil {
				return nil, err
			}
			e.Payload = b
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// appendRecords appends entries to world in the store in dir (creating
// it), after the world's current head.
func appendRecords(ctx context.Context, dir, world string, entries []journal.Entry) (journal.Head, error) {
	s, err := store.Open(dir, &store.Options{NoSync: true})
	if err != nil {
		return journal.Head{}, err
	}
	defer s.Close()
	head, err := s.Journal().Head(ctx, world)
	if err != nil {
		return journal.Head{}, err
	}
	return s.Journal().Append(ctx, world, head, entries)
}

// corruptBlob changes the stored bytes of ref in the store in dir (the
// last byte is flipped, or a byte added to an empty blob), so they no
// longer hash to ref. It writes through bbolt, keeping the file sound.
func corruptBlob(dir string, ref cas.Ref) error {
	db, err := bbolt.Open(filepath.Join(dir, store.FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return castest.CorruptBoltBlob(db, ref)
}

// corruptRecord changes the payload of record seq of world in the store
// in dir (a byte is appended) and stores the re-encoded record where the
// original was, so that the record decodes but the next link (or the
// head) no longer matches. It finds the record by its bytes, not by the
// journal's bucket layout.
func corruptRecord(ctx context.Context, dir, world string, seq uint64) error {
	s, err := store.Open(dir, &store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	var orig journal.Record
	found := false
	err = s.Journal().Read(ctx, world, seq, func(r journal.Record) error {
		orig, found = r, true
		return errStop
	})
	s.Close()
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if !found || orig.Seq != seq {
		return fmt.Errorf("world %s has no record %d", world, seq)
	}
	old, err := orig.Encode()
	if err != nil {
		return err
	}
	changed := orig
	// Same length, so the record's frame in its journal step stays valid.
	if len(orig.Payload) == 0 {
		return fmt.Errorf("record %d of world %s has an empty payload", seq, world)
	}
	changed.Payload = bytes.Clone(orig.Payload)
	changed.Payload[len(changed.Payload)-1] ^= 0x01
	bad, err := changed.Encode()
	if err != nil {
		return err
	}

	db, err := bbolt.Open(filepath.Join(dir, store.FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *bbolt.Tx) error {
		var path [][]byte // bucket names down to the value holding the record, then its key
		var walk func(b *bbolt.Bucket, names [][]byte) error
		walk = func(b *bbolt.Bucket, names [][]byte) error {
			return b.ForEach(func(k, v []byte) error {
				sub := append(append([][]byte(nil), names...), append([]byte(nil), k...))
				if v == nil {
					return walk(b.Bucket(k), sub)
				}
				if bytes.Contains(v, old) {
					path = sub
					return errStop
				}
				return nil
			})
		}
		err := tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return walk(b, [][]byte{append([]byte(nil), name...)})
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		if path == nil {
			return fmt.Errorf("record %d of world %s not found in %s", seq, world, db.Path())
		}
		b := tx.Bucket(path[0])
		for _, name := range path[1 : len(path)-1] {
			b = b.Bucket(name)
		}
		v := b.Get(path[len(path)-1])
		return b.Put(path[len(path)-1], bytes.Replace(v, old, bad, 1))
	})
}

var errStop = errors.New("stop")
