package pgstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
)

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func entries(n int, tag string) []journal.Entry {
	es := make([]journal.Entry, n)
	for i := range es {
		es[i] = journal.Entry{Kind: "K", Payload: []byte(fmt.Sprintf("%s %d", tag, i))}
	}
	return es
}

// A step's records and blobs commit together or not at all: a commit
// refused for its head writes none of its blobs.
func TestCommitAtomic(t *testing.T) {
	s, _ := open(t)
	ctx := t.Context()
	small, large := []byte("a blob of the step"), randomBytes(1, 3*pgstore.ChunkSize+17)
	h, err := s.Commit(ctx, "w", journal.Head{}, entries(5, "one"), [][]byte{small, large, small})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{small, large} {
		got, err := s.CAS().Get(ctx, cas.Sum(b))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("Get after Commit: %d bytes, %v; want the %d bytes committed", len(got), err, len(b))
		}
	}
	other, otherLarge := []byte("never stored"), randomBytes(2, pgstore.ChunkSize+1)
	for _, expect := range []journal.Head{{}, {Seq: 3, Hash: h.Hash}, {Seq: 9, Hash: h.Hash}} {
		_, err := s.Commit(ctx, "w", expect, entries(2, "two"), [][]byte{other, otherLarge})
		if !errors.Is(err, journal.ErrConflict) {
			t.Fatalf("Commit with expect %v: %v; want ErrConflict", expect, err)
		}
	}
	for _, b := range [][]byte{other, otherLarge} {
		if has, err := s.CAS().Has(ctx, cas.Sum(b)); has || err != nil {
			t.Errorf("a refused commit stored a blob of %d bytes (Has = %v, %v)", len(b), has, err)
		}
	}
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM cas_chunks`).Scan(&n); err != nil || n != 4 {
		t.Errorf("cas_chunks holds %d rows, %v; want the 4 chunks of the committed large blob", n, err)
	}
	if head, err := journal.Verify(ctx, s.Journal(), "w"); err != nil || head != h {
		t.Fatalf("Verify = %v, %v; want %v", head, err, h)
	}
}

// Blobs of any size stream in and out through PutReader and Reader, and
// a Reader of damaged bytes ends with ErrCorrupt, not io.EOF.
func TestStreaming(t *testing.T) {
	s, _ := open(t)
	ctx := t.Context()
	c := s.CAS()
	for _, size := range []int{0, 1, pgstore.ChunkSize - 1, pgstore.ChunkSize, pgstore.ChunkSize + 1, 2 * pgstore.ChunkSize, 5*pgstore.ChunkSize + 3} {
		data := randomBytes(uint64(size), size)
		ref, n, err := c.PutReader(ctx, iotestOneByteAtStart(bytes.NewReader(data)))
		if err != nil || ref != cas.Sum(data) || n != int64(size) {
			t.Fatalf("PutReader(%d bytes) = %v, %d, %v; want %v, %d", size, ref, n, err, cas.Sum(data), size)
		}
		again, _, err := c.PutReader(ctx, bytes.NewReader(data))
		if err != nil || again != ref {
			t.Fatalf("PutReader again = %v, %v", again, err)
		}
		r, err := c.Reader(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Reader(%d bytes) read %d bytes, %v", size, len(got), err)
		}
		if whole, err := c.Get(ctx, ref); err != nil || !bytes.Equal(whole, data) {
			t.Fatalf("Get(%d bytes) = %d bytes, %v", size, len(whole), err)
		}
	}
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM cas_chunks WHERE octet_length(digest) <> 32`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d chunks left under temporary keys, %v", n, err)
	}
	// Damage the third chunk of a large blob.
	data := randomBytes(99, 4*pgstore.ChunkSize)
	ref, _, err := c.PutReader(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	d := ref.Digest()
	if _, err := s.Pool().Exec(ctx, `UPDATE cas_chunks SET data = set_byte(data, 7, get_byte(data, 7) # 1) WHERE digest = $1 AND n = 2`, d[:]); err != nil {
		t.Fatal(err)
	}
	r, err := c.Reader(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if !errors.Is(err, cas.ErrCorrupt) || len(got) != len(data) {
		t.Fatalf("Reader of a damaged blob: %d bytes, %v; want all bytes and then ErrCorrupt", len(got), err)
	}
	if _, err := c.Get(ctx, ref); !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("Get of a damaged blob: %v; want ErrCorrupt", err)
	}
	if _, err := c.Reader(ctx, cas.Sum([]byte("absent"))); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Reader of an absent blob: %v; want ErrNotFound", err)
	}
}

// iotestOneByteAtStart returns the first byte alone, then the rest: a
// reader that does not fill buffers.
func iotestOneByteAtStart(r io.Reader) io.Reader {
	return io.MultiReader(io.LimitReader(r, 1), r)
}

// A record altered in the table is reported, and Read never hands it to
// fn.
func TestJournalCorruption(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name, sql string
		seq       int
		want      string
	}{
		{"payload", `UPDATE journal_records SET payload = 'changed' WHERE world = 'w' AND seq = $1`, 4, "record 4 hashes to"},
		{"payload and hash", `UPDATE journal_records SET payload = 'changed', hash = $2 WHERE world = 'w' AND seq = $1`, 4, "hash chain broken at seq 5"},
		{"missing record", `DELETE FROM journal_records WHERE world = 'w' AND seq = $1`, 4, "record 4 is missing"},
		{"last record", `UPDATE journal_records SET payload = 'changed', hash = $2 WHERE world = 'w' AND seq = $1`, 6, "hash chain broken at seq 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := open(t)
			h, err := s.Journal().Append(ctx, "w", journal.Head{}, entries(6, "x"))
			if err != nil {
				t.Fatal(err)
			}
			forged := journal.Record{Seq: uint64(tc.seq), Kind: "K", Payload: []byte("changed")}
			var prev journal.Record
			_ = s.Journal().Read(ctx, "w", uint64(tc.seq), func(r journal.Record) error { prev = r; return io.EOF })
			forged.Prev = prev.Prev
			b, _ := forged.Encode()
			fd := cas.Sum(b).Digest()
			args := []any{tc.seq}
			if strings.Contains(tc.sql, "$2") {
				args = append(args, fd[:])
			}
			if _, err := s.Pool().Exec(ctx, tc.sql, args...); err != nil {
				t.Fatal(err)
			}
			var seen []uint64
			err = s.Journal().Read(ctx, "w", 1, func(r journal.Record) error {
				if string(r.Payload) == "changed" {
					t.Errorf("Read handed the altered record %d to fn", r.Seq)
				}
				seen = append(seen, r.Seq)
				return nil
			})
			var ce *journal.CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "world w") {
				t.Fatalf("Read: %v; want a *journal.CorruptError saying %q", err, tc.want)
			}
			if _, err := journal.Verify(ctx, s.Journal(), "w"); !errors.Is(err, journal.ErrCorrupt) {
				t.Fatalf("Verify: %v; want ErrCorrupt", err)
			}
			_ = h
		})
	}
}

// Read-only stores write nothing, and a database without a store is not
// one.
func TestReadOnly(t *testing.T) {
	ctx := t.Context()
	u := pgtest.URL(t)
	if _, err := pgstore.Open(ctx, u, &pgstore.Options{ReadOnly: true}); !errors.Is(err, pgstore.ErrNoStore) {
		t.Fatalf("read-only Open of an empty database: %v; want ErrNoStore", err)
	}
	var tables int
	s, err := pgstore.Open(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil || tables == 0 {
		t.Fatalf("the store made %d tables, %v", tables, err)
	}
	h, err := s.Journal().Append(ctx, "w", journal.Head{}, entries(2, "x"))
	if err != nil {
		t.Fatal(err)
	}
	ro, err := pgstore.Open(ctx, u, &pgstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Journal().Append(ctx, "w", h, entries(1, "y")); !errors.Is(err, journal.ErrReadOnly) {
		t.Errorf("Append on a read-only store: %v; want journal.ErrReadOnly", err)
	}
	if _, err := ro.CAS().Put(ctx, []byte("x")); !errors.Is(err, cas.ErrReadOnly) {
		t.Errorf("Put on a read-only store: %v; want cas.ErrReadOnly", err)
	}
	if _, err := ro.Pool().Exec(ctx, `DELETE FROM journal_records`); err == nil {
		t.Errorf("a read-only store's connections may write")
	}
	if got, err := journal.Verify(ctx, ro.Journal(), "w"); err != nil || got != h {
		t.Errorf("Verify on the read-only store = %v, %v; want %v", got, err, h)
	}
}

// Processes opening a new store at once create it once; a newer schema is
// refused.
func TestMigrate(t *testing.T) {
	ctx := t.Context()
	u := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			s, err := pgstore.Open(ctx, u, nil)
			if err == nil {
				_, err = s.Journal().Head(ctx, "w")
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	s, err := pgstore.Open(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE demiurge_meta SET value = '99' WHERE key = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := pgstore.Open(ctx, u, nil); !errors.Is(err, pgstore.ErrSchemaVersion) || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("Open of a store at version 99: %v; want ErrSchemaVersion naming it", err)
	}
}

// The store's password is in no error.
func TestPasswordNeverShown(t *testing.T) {
	srv := pgtest.Shared(t)
	ctx := t.Context()
	good := srv.URL("postgres")
	for _, tc := range []struct{ name, url string }{
		{"wrong password", strings.Replace(good, srv.Password(), srv.Password()+"x", 1)},
		{"unknown database", strings.Replace(good, "/postgres?", "/nosuchdb?", 1)},
		{"nobody listening", strings.Replace(good, fmt.Sprintf(":%d/", srv.Port()), ":1/", 1)},
		{"bad option", good + "&sslmode=bogus"},
		{"bad port", strings.Replace(good, fmt.Sprintf(":%d/", srv.Port()), ":99999999/", 1)},
		{"password in the query", "postgres://127.0.0.1:1/x?sslmode=disable&password=" + srv.Password()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := pgstore.Open(ctx, tc.url, &pgstore.Options{ConnectTimeout: 2e9})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			srv.Scrub(t, "the error", err.Error())
			if !strings.Contains(err.Error(), "xxxxx") && !strings.Contains(err.Error(), "postgres://") {
				t.Errorf("the error does not say which store: %v", err)
			}
		})
	}
	if got := pgstore.Redact(good); strings.Contains(got, srv.Password()) || !strings.Contains(got, "127.0.0.1") {
		t.Errorf("Redact = %q", got)
	}
}

// A URL whose password has special characters not percent-encoded does
// not parse; the error says what to do and quotes no part of the
// password (net/url's and pgx's errors quote the part that does not
// parse).
func TestUnparsedURLHidesPassword(t *testing.T) {
	for _, tc := range []struct{ url, secret string }{
		{"postgres://demiurge:p@ss:w/rd%secret@127.0.0.1:1/demiurge", "secret"},
		{"postgres://demiurge:Qz9/ss@127.0.0.1:1/demiurge", "Qz9"},
		{"postgresql://demiurge:Qz9#ss@127.0.0.1:1/demiurge", "Qz9"},
		{"postgres://demiurge:pw%zzsecret@127.0.0.1:1/demiurge", "zzsecret"},
	} {
		s, err := pgstore.Open(t.Context(), tc.url, &pgstore.Options{ConnectTimeout: 2e9})
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) succeeded", tc.url)
		}
		msg := err.Error()
		if strings.Contains(msg, tc.secret) || !strings.Contains(msg, "percent-encode") {
			t.Errorf("Open(%s): %v; want it to say to percent-encode, and not to show %q", tc.url, msg, tc.secret)
		}
	}
}

// A connection that fails says what to do about it.
func TestConnectErrorsSayWhatToDo(t *testing.T) {
	srv := pgtest.Shared(t)
	good := srv.URL("postgres")
	for _, tc := range []struct{ name, url, want string }{
		{"wrong password", strings.Replace(good, srv.Password(), srv.Password()+"x", 1), "check the user name and password"},
		{"unknown database", strings.Replace(good, "/postgres?", "/nosuchdb?", 1), "create the database"},
		{"nobody listening", strings.Replace(good, fmt.Sprintf(":%d/", srv.Port()), ":1/", 1), "is the PostgreSQL server running"},
		// Under sslmode=prefer (the default) a server without TLS
		// refuses it and pgx tries again without: the failure is the
		// second attempt's, not the refusal.
		{"wrong password, sslmode=prefer", strings.Replace(strings.Replace(good, srv.Password(), srv.Password()+"x", 1), "sslmode=disable", "sslmode=prefer", 1), "check the user name and password"},
		{"unknown database, sslmode=prefer", strings.Replace(strings.Replace(good, "/postgres?", "/nosuchdb?", 1), "sslmode=disable", "sslmode=prefer", 1), "create the database"},
	} {
		s, err := pgstore.Open(t.Context(), tc.url, &pgstore.Options{ConnectTimeout: 2e9})
		if err == nil {
			s.Close()
			t.Fatalf("%s: Open succeeded", tc.name)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want it to say %q", tc.name, err, tc.want)
		}
		if strings.Contains(err.Error(), "TLS") {
			t.Errorf("%s: %v; want no word of TLS, which the server refused before the attempt that failed", tc.name, err)
		}
		srv.Scrub(t, "the error", err.Error())
	}
}
