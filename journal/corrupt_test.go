package journal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
)

// buildJournal writes a journal file with world "w" (10 records, one per
// step) and world "other" (3 records) and returns its path.
func buildJournal(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var h Head
	for seq := 1; seq <= 10; seq++ {
		if h, err = j.Append(t.Context(), "w", h, []Entry{{Kind: "Step", Payload: marker("w", seq)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Append(t.Context(), "other", Head{}, []Entry{{Kind: "A"}, {Kind: "B"}, {Kind: "C"}}); err != nil {
		t.Fatal(err)
	}
	return path
}

// marker is a payload that appears once in the file, so a test can find it.
func marker(world string, seq int) []byte {
	return fmt.Appendf(nil, "MARKER<%s:%03d>%s", world, seq, strings.Repeat("-", 40))
}

// mutate opens the file with bbolt directly and lets fn change it.
func mutate(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// stepAt returns the position of the step of world holding seq.
func stepAt(tx *bbolt.Tx, world string, seq uint64) (uint64, stepHeader, error) {
	c := tx.Bucket(bucketLog).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 8 {
			continue
		}
		h, err := decodeStepHeader(v)
		if err == nil && h.world == world && h.first <= seq && seq <= h.last() {
			return binary.BigEndian.Uint64(k), h, nil
		}
	}
	return 0, stepHeader{}, fmt.Errorf("no step of world %s holds seq %d", world, seq)
}

// editRecord replaces the bytes of record seq of world "w" with
// edit(copy of them).
func editRecord(tx *bbolt.Tx, seq uint64, edit func([]byte) []byte) error {
	pos, h, err := stepAt(tx, "w", seq)
	if err != nil {
		return err
	}
	return editValue(tx.Bucket(bucketLog), recordKey(pos, uint32(seq-h.first)), edit)
}

// deleteStep deletes the step of world "w" holding seq, header and records.
func deleteStep(tx *bbolt.Tx, seq uint64) error {
	pos, h, err := stepAt(tx, "w", seq)
	if err != nil {
		return err
	}
	log := tx.Bucket(bucketLog)
	for i := range uint32(h.n) {
		if err := log.Delete(recordKey(pos, i)); err != nil {
			return err
		}
	}
	return log.Delete(posKey(pos))
}

// stepRecordsOf returns copies of the records of the step h at pos.
func stepRecordsOf(tx *bbolt.Tx, pos uint64, h stepHeader) [][]byte {
	var recs [][]byte
	_ = stepRecords(tx.Bucket(bucketLog).Cursor(), pos, h, func(_ uint64, v []byte) error {
		recs = append(recs, bytes.Clone(v))
		return nil
	})
	return recs
}

// editValue replaces the value of key k in b with edit(copy of value).
func editValue(b *bbolt.Bucket, k []byte, edit func([]byte) []byte) error {
	v := b.Get(k)
	if v == nil {
		return fmt.Errorf("no key %x", k)
	}
	return b.Put(k, edit(bytes.Clone(v)))
}

func flipAt(i int) func([]byte) []byte {
	return func(v []byte) []byte {
		if i < 0 {
			i += len(v)
		}
		v[i] ^= 0x01
		return v
	}
}

// payloadOffset returns where the payload starts in an encoded record.
func payloadOffset(t *testing.T, v []byte) int {
	i := bytes.Index(v, []byte("MARKER<"))
	if i < 0 {
		t.Fatal("no marker in record")
	}
	return i
}

func TestCorruption(t *testing.T) {
	t.Parallel()
	worldsW := func(tx *bbolt.Tx, edit func([]byte) []byte) error {
		return editValue(tx.Bucket(bucketLog), headKey("w"), edit)
	}
	for _, tc := range []struct {
		name    string
		mutate  func(t *testing.T, tx *bbolt.Tx) error
		seq     uint64 // the seq the error must name
		want    string // part of the message
		goodRec int    // records Read delivers before the error: those a link confirmed
	}{
		{"flipped payload byte", func(t *testing.T, tx *bbolt.Tx) error {
			return editRecord(tx, 5, func(v []byte) []byte { return flipAt(payloadOffset(t, v) + 10)(v) })
		}, 6, "journal: world w: hash chain broken at seq 6: prev is blake3:", 4},
		{"flipped payload byte of the last record", func(t *testing.T, tx *bbolt.Tx) error {
			return editRecord(tx, 10, flipAt(-1))
		}, 10, "journal: world w: hash chain broken at seq 10: the head is blake3:", 9},
		{"flipped prev byte", func(t *testing.T, tx *bbolt.Tx) error {
			return editRecord(tx, 5, func(v []byte) []byte {
				return flipAt(bytes.Index(v, keyPrev) + len(keyPrev) + 2 + 7)(v)
			})
		}, 5, "journal: world w: hash chain broken at seq 5: prev is", 3},
		{"flipped map header", func(t *testing.T, tx *bbolt.Tx) error {
			return editRecord(tx, 5, flipAt(3))
		}, 5, "journal: world w: record 5 does not decode: at byte 3: map has 5 entries, want 4", 3},
		{"flipped seq", func(t *testing.T, tx *bbolt.Tx) error {
			return editRecord(tx, 5, func(v []byte) []byte { v[8] = 7; return v })
		}, 5, "journal: world w: record stored as seq 5 holds seq 7", 3},
		{"truncated record", func(t *testing.T, tx *bbolt.Tx) error {
			return editRecord(tx, 5, func(v []byte) []byte { return v[:len(v)/2] })
		}, 5, "journal: world w: record 5 does not decode: at byte", 3},
		{"empty record", func(t *testing.T, tx *bbolt.Tx) error {
			return editRecord(tx, 5, func([]byte) []byte { return nil })
		}, 5, "journal: world w: record 5 does not decode: at byte 0: missing self-describe prefix", 3},
		{"truncated step header", func(t *testing.T, tx *bbolt.Tx) error {
			return editValue(tx.Bucket(bucketLog), posKey(5), func(v []byte) []byte { return v[:len(v)-1] })
		}, 5, "journal: world w: record 5 is missing (the next stored record is 6, at position 6) (the step at position 5 does not decode: bad record count)", 3},
		{"deleted record", func(t *testing.T, tx *bbolt.Tx) error {
			return tx.Bucket(bucketLog).Delete(recordKey(5, 0))
		}, 5, "journal: world w: record 5 is missing: record 1 of 1 of the step at position 5 is missing (found key 0000000000000006)", 3},
		{"deleted step", func(t *testing.T, tx *bbolt.Tx) error {
			return deleteStep(tx, 5)
		}, 5, "journal: world w: record 5 is missing (the next stored record is 6, at position 6)", 3},
		{"deleted last step", func(t *testing.T, tx *bbolt.Tx) error {
			return deleteStep(tx, 10)
		}, 10, "journal: world w: record 10 is missing (the head is seq 10, the records end at 9)", 8},
		{"head at another world's step", func(t *testing.T, tx *bbolt.Tx) error {
			return worldsW(tx, func(v []byte) []byte { binary.BigEndian.PutUint64(v[40:], 11); return v })
		}, 10, `journal: world w: link from the head entry to record 10 broken: the step at position 11 belongs to world "other"`, 10},
		{"step linked to a step of other records", func(t *testing.T, tx *bbolt.Tx) error {
			return editValue(tx.Bucket(bucketLog), posKey(6), func(v []byte) []byte { setStepPrev(v, 3); return v })
		}, 6, "journal: world w: link before record 6 (from position 6) broken: the step at position 3 holds records 3 to 3", 10},
		{"step linked to itself", func(t *testing.T, tx *bbolt.Tx) error {
			return editValue(tx.Bucket(bucketLog), posKey(6), func(v []byte) []byte { setStepPrev(v, 6); return v })
		}, 6, "journal: world w: link before record 6 broken: the step at position 6 links to position 6", 10},
		{"head at the wrong position", func(t *testing.T, tx *bbolt.Tx) error {
			return worldsW(tx, func(v []byte) []byte { binary.BigEndian.PutUint64(v[40:], 9); return v })
		}, 10, "journal: world w: link from the head entry to record 10 broken: the step at position 9 holds records 9 to 9", 10},
		{"flipped head hash", func(t *testing.T, tx *bbolt.Tx) error {
			return worldsW(tx, flipAt(39))
		}, 10, "journal: world w: hash chain broken at seq 10: the head is blake3:", 9},
		{"truncated head", func(t *testing.T, tx *bbolt.Tx) error {
			return worldsW(tx, func(v []byte) []byte { return v[:20] })
		}, 0, "journal: world w: head entry is 20 bytes, want 48", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := buildJournal(t)
			mutate(t, path, func(tx *bbolt.Tx) error { return tc.mutate(t, tx) })
			j, err := OpenBolt(path, &BoltOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()

			_, err = Verify(t.Context(), j, "w")
			checkCorrupt(t, err, tc.seq, tc.want)

			n := 0
			err = j.Read(t.Context(), "w", 1, func(Record) error { n++; return nil })
			checkCorrupt(t, err, tc.seq, tc.want)
			if n != tc.goodRec {
				t.Errorf("Read delivered %d records before the error; want %d", n, tc.goodRec)
			}
			if _, err := Verify(t.Context(), j, "other"); err != nil {
				t.Errorf("Verify(other) = %v; the damage is in world w only", err)
			}
		})
	}
}

func checkCorrupt(t *testing.T, err error, seq uint64, want string) {
	t.Helper()
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("got error %v; want a *CorruptError", err)
	}
	if ce.World != "w" || ce.Seq != seq || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %q (world %s, seq %d); want world w, seq %d, message containing %q", err, ce.World, ce.Seq, seq, want)
	}
}

// TestCorruptionEveryByte flips each bit of every byte of one record in
// turn: each flip must be reported at that record or the next one, never
// missed, never a panic.
func TestCorruptionEveryByte(t *testing.T) {
	t.Parallel()
	path := buildJournal(t)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j, err := NewBolt(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, key := range [][]byte{posKey(5), recordKey(5, 0)} {
		put := func(v []byte) {
			err := db.Update(func(tx *bbolt.Tx) error {
				return tx.Bucket(bucketLog).Put(key, v)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		var orig []byte
		_ = db.View(func(tx *bbolt.Tx) error {
			orig = bytes.Clone(tx.Bucket(bucketLog).Get(key))
			return nil
		})
		for i := range orig {
			for bit := range 8 {
				v := bytes.Clone(orig)
				v[i] ^= 1 << bit
				put(v)
				_, err := Verify(t.Context(), j, "w")
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.World != "w" || (ce.Seq != 5 && ce.Seq != 6) {
					t.Fatalf("key %x: byte %d bit %d flipped: Verify = %v; want a *CorruptError at seq 5 or 6", key, i, bit, err)
				}
			}
		}
		put(orig)
		if _, err := Verify(t.Context(), j, "w"); err != nil {
			t.Fatalf("after restoring key %x: %v", key, err)
		}
	}
}

// TestCorruptionRawFile flips a byte of a record's payload in the file
// itself, as bit rot would, below bbolt (which has no page checksums).
func TestCorruptionRawFile(t *testing.T) {
	t.Parallel()
	path := buildJournal(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := marker("w", 5)
	n := 0
	for off := 0; ; {
		i := bytes.Index(data[off:], m)
		if i < 0 {
			break
		}
		data[off+i+len(m)-3] ^= 0x20 // every copy, including freed pages
		off += i + len(m)
		n++
	}
	if n == 0 {
		t.Fatal("record 5 not found in the file")
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := OpenBolt(path, &BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, err = Verify(t.Context(), j, "w")
	checkCorrupt(t, err, 6, "journal: world w: hash chain broken at seq 6")
}

// TestCorruptionMovedWorld copies a world's records and head under another
// name: the genesis link catches it.
func TestCorruptionMovedWorld(t *testing.T) {
	t.Parallel()
	path := buildJournal(t)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Copy every step of w, re-framed under the name x, and w's head.
	err = db.Update(func(tx *bbolt.Tx) error {
		w := &logWriter{tx: tx}
		ws := &worldState{}
		for seq := uint64(1); seq <= 10; {
			pos, h, err := stepAt(tx, "w", seq)
			if err != nil {
				return err
			}
			recs := stepRecordsOf(tx, pos, h)
			if err := w.putStep("x", ws, h.first, encodeStep("x", h.first, len(recs)), recs); err != nil {
				return err
			}
			seq = h.last() + 1
		}
		wh, _, err := loadWorldHead(tx, "w")
		if err != nil {
			return err
		}
		ws.head = wh.head
		return w.putHead("x", ws)
	})
	if err != nil {
		t.Fatal(err)
	}
	j, err := NewBolt(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(t.Context(), j, "x")
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.World != "x" || ce.Seq != 1 || !strings.Contains(err.Error(), "hash chain broken at seq 1") || !strings.Contains(err.Error(), "genesis") {
		t.Fatalf("Verify of a moved world = %v; want hash chain broken at seq 1 (genesis)", err)
	}
	j.Close()
	db.Close()
}

// TestCorruptionHeadsAndRecordsDisagree checks Worlds and Append against a
// world whose head entry or records are gone.
func TestCorruptionHeadsAndRecordsDisagree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mutate func(tx *bbolt.Tx) error
		want   string
	}{
		{"head deleted", func(tx *bbolt.Tx) error { return tx.Bucket(bucketLog).Delete(headKey("w")) }, "world w has no head entry, but has records"},
		{"tail deleted", func(tx *bbolt.Tx) error { return deleteStep(tx, 10) }, "the head is seq 10, but the step at position 10 is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := buildJournal(t)
			mutate(t, path, tc.mutate)
			j, err := OpenBolt(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			head, err := j.Head(ctx, "w")
			if tc.name == "head deleted" {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Head: %v; want ErrCorrupt containing %q", err, tc.want)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			_, err = j.Append(ctx, "w", head, []Entry{{Kind: "More"}})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Append on a damaged world: %v; want ErrCorrupt containing %q", err, tc.want)
			}
			if _, err := j.Append(ctx, "other", Head{}, []Entry{{Kind: "More"}}); !errors.Is(err, ErrConflict) {
				t.Fatalf("Append to another world: %v; want only the usual conflict", err)
			}
			// The world is listed, for Verify to say what is wrong with it.
			if worlds, err := j.Worlds(ctx); err != nil || !slices.Contains(worlds, "w") {
				t.Fatalf("Worlds: %q, %v; want w listed", worlds, err)
			}
			if _, err := Verify(ctx, j, "w"); tc.name == "head deleted" && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Verify: %v; want ErrCorrupt containing %q", err, tc.want)
			}
		})
	}
}

// TestCorruptionZeroedPages zeroes each page of a journal file in turn, as
// a failed disk or a bad copy would: opening, listing, reading and
// appending give the records as they were or an error wrapping ErrCorrupt
// (a *cas.BoltDamageError naming the file, for a page bbolt found
// damaged), never a panic and never a changed record.
func TestCorruptionZeroedPages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	worlds := []string{"a", "b", "c"}
	heads := map[string]Head{}
	for i := range 60 {
		w := worlds[i%len(worlds)]
		if heads[w], err = j.Append(ctx, w, heads[w], []Entry{{Kind: "Step", Payload: bytes.Repeat(marker(w, i), 4)}}); err != nil {
			t.Fatal(err)
		}
	}
	pageSize, pages := j.DB().Info().PageSize, 0
	_ = j.DB().View(func(tx *bbolt.Tx) error { pages = int(tx.Size()) / pageSize; return nil })
	j.Close()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	noticed := 0
	for page := 2; page < pages; page++ {
		b := bytes.Clone(orig)
		clear(b[page*pageSize : (page+1)*pageSize])
		damaged := filepath.Join(t.TempDir(), fmt.Sprintf("page%d.db", page))
		if err := os.WriteFile(damaged, b, 0o600); err != nil {
			t.Fatal(err)
		}
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				return
			}
			noticed++
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, cas.ErrCorrupt) {
				t.Errorf("page %d: %s: %v; want an error wrapping ErrCorrupt", page, what, err)
			}
			if d, ok := errors.AsType[*cas.BoltDamageError](err); ok && (d.Path != damaged || !strings.Contains(err.Error(), damaged)) {
				t.Errorf("page %d: %s: %v; want it to name %s", page, what, err, damaged)
			}
		}
		for _, ro := range []bool{true, false} {
			j, err := OpenBolt(damaged, &BoltOptions{ReadOnly: ro})
			if err != nil {
				check("open", err)
				continue
			}
			listed, err := j.Worlds(ctx)
			check("Worlds", err)
			for _, w := range listed {
				if !slices.Contains(worlds, w) {
					t.Errorf("page %d: Worlds lists %q", page, w)
				}
			}
			for _, w := range worlds {
				got, err := Verify(ctx, j, w)
				check("Verify "+w, err)
				if err == nil && got != heads[w] {
					t.Errorf("page %d: Verify %s = %v without an error; want %v", page, w, got, heads[w])
				}
				err = j.Read(ctx, w, 1, func(r Record) error {
					if !bytes.Equal(r.Payload, bytes.Repeat(marker(w, int(r.Seq-1)*len(worlds)+slices.Index(worlds, w)), 4)) {
						t.Errorf("page %d: world %s record %d read back changed", page, w, r.Seq)
					}
					return nil
				})
				check("Read "+w, err)
				if !ro {
					_, err := j.Append(ctx, w, heads[w], []Entry{{Kind: "More"}})
					check("Append "+w, err)
				}
			}
			j.Close()
		}
	}
	t.Logf("%d pages zeroed in turn: %d errors", pages-2, noticed)
	if noticed < pages/2 {
		t.Errorf("the damage was noticed %d times over %d pages", noticed, pages-2)
	}
}

// TestCorruptionNeverDelivered: a record changed in place is not delivered
// by Read, even when it ends a chunk and the link that gives it away is in
// the next one.
func TestCorruptionNeverDelivered(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Steps of 10 records: the first chunk ends with the step that reaches
	// readChunkRecords, at record 520.
	const step = 10
	const n = (readChunkRecords/step + 2) * step
	var h Head
	for first := 1; first <= n; first += step {
		var entries []Entry
		for seq := first; seq < first+step; seq++ {
			entries = append(entries, Entry{Kind: "Step", Payload: marker("w", seq)})
		}
		if h, err = j.Append(ctx, "w", h, entries); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	end := uint64((readChunkRecords + step - 1) / step * step)
	for _, seq := range []uint64{end - 1, end, end + 1, n} {
		t.Run(fmt.Sprint(seq), func(t *testing.T) {
			damaged := filepath.Join(t.TempDir(), "j.db")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(damaged, b, 0o600); err != nil {
				t.Fatal(err)
			}
			mutate(t, damaged, func(tx *bbolt.Tx) error {
				return editRecord(tx, seq, func(v []byte) []byte { return flipAt(payloadOffset(t, v) + 10)(v) })
			})
			j, err := OpenBolt(damaged, &BoltOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var last uint64
			err = j.Read(ctx, "w", 1, func(r Record) error {
				if !bytes.Equal(r.Payload, marker("w", int(r.Seq))) {
					t.Errorf("record %d delivered changed", r.Seq)
				}
				last = r.Seq
				return nil
			})
			if ce, ok := errors.AsType[*CorruptError](err); !ok || ce.Seq != min(seq+1, n) {
				t.Errorf("Read: %v; want a *CorruptError at the link after record %d", err, seq)
			}
			if last != seq-1 {
				t.Errorf("Read delivered records up to %d; want up to %d", last, seq-1)
			}
		})
	}
}
