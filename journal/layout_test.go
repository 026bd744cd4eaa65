package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

func TestAnchored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		first, last uint64
		want        bool
	}{
		{1, 1, true},
		{1, 200, true},
		{2, 128, false},
		{2, 129, true},
		{129, 129, true},
		{129, 300, true},
		{130, 256, false},
		{250, 257, true},
		{258, 384, false},
		{258, 385, true},
	} {
		if got := anchored(tc.first, tc.last); got != tc.want {
			t.Errorf("anchored(%d, %d) = %v; want %v", tc.first, tc.last, got, tc.want)
		}
	}
}

func TestStepHeader(t *testing.T) {
	t.Parallel()
	step := encodeStep("world-1", 42, 3)
	setStepPrev(step, 7)
	h, err := decodeStepHeader(step)
	if err != nil {
		t.Fatal(err)
	}
	if h.prev != 7 || h.world != "world-1" || h.first != 42 || h.n != 3 || h.last() != 44 {
		t.Fatalf("header = %+v", h)
	}
	for _, tc := range []struct {
		name string
		step []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"version", append([]byte{2}, step[1:]...), "step version 2"},
		{"no name", step[:9], "bad world name length"},
		{"long name", append(step[:9:9], 200, 1), "world name length 200 out of range"},
		{"no records", encodeStep("w", 1, 0), "record count 0 out of range"},
		{"seq 0", encodeStep("w", 0, 1), "first seq 0"},
		{"overflow", encodeStep("w", 1<<64-1, 2), "out of range"},
		{"trailing bytes", append(bytes.Clone(step), 0), "1 bytes after the step header"},
	} {
		if _, err := decodeStepHeader(tc.step); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: decodeStepHeader = %v; want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzDecodeStepHeader feeds arbitrary bytes to the step header decoder:
// an error or a header that encodes back to the same bytes, never a panic.
func FuzzDecodeStepHeader(f *testing.F) {
	f.Add(encodeStep("w", 1, 1))
	f.Add(encodeStep("world", 129, 300))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'w', 1, 255, 255, 255, 255, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeStepHeader(b)
		if err != nil {
			return
		}
		again := encodeStep(h.world, h.first, int(h.n))
		setStepPrev(again, h.prev)
		if h.n != uint64(int(h.n)) || h.last() < h.first {
			t.Fatalf("header %+v out of range", h)
		}
		if _, err := decodeStepHeader(again); err != nil {
			t.Fatalf("re-encoded header %x does not decode: %v", again, err)
		}
	})
}

// buildSteps appends to world "w" steps of the given sizes, interleaved
// with one-record steps of world "o", and returns the head of w.
func buildSteps(t *testing.T, j *Bolt, sizes []int) Head {
	t.Helper()
	var hw, ho Head
	for i, n := range sizes {
		es := make([]Entry, n)
		for k := range es {
			es[k] = Entry{Kind: "K", Payload: fmt.Appendf(nil, "w %d.%d", i, k)}
		}
		var err error
		if hw, err = j.Append(t.Context(), "w", hw, es); err != nil {
			t.Fatal(err)
		}
		if ho, err = j.Append(t.Context(), "o", ho, []Entry{{Kind: "K"}}); err != nil {
			t.Fatal(err)
		}
	}
	return hw
}

var stepSizes = []int{1, 5, 1, 130, 2, 3, 1, 300, 7, 7, 7, 1, 1, 1, 126, 2, 128, 129, 5, 1}

// TestReadFromEverySeq reads world w from every seq: each read yields the
// records from there to the head, in order, whatever step and anchor the
// seq falls on.
func TestReadFromEverySeq(t *testing.T) {
	t.Parallel()
	j := openTestBolt(t)
	head := buildSteps(t, j, stepSizes)
	for from := uint64(1); from <= head.Seq+1; from++ {
		next := from
		err := j.Read(t.Context(), "w", from, func(r Record) error {
			if r.Seq != next {
				return fmt.Errorf("got seq %d, want %d", r.Seq, next)
			}
			next++
			return nil
		})
		if err != nil || next != head.Seq+1 {
			t.Fatalf("Read from %d: %v, ended before %d; want records up to %d", from, err, next, head.Seq)
		}
	}
	if _, err := Verify(t.Context(), j, "o"); err != nil {
		t.Fatal(err)
	}
}

// TestReadDamagedAnchor points an anchor at the wrong step: reads still
// deliver every record, by scanning, and then report the anchor.
func TestReadDamagedAnchor(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	head := buildSteps(t, j, stepSizes)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	var anchorSeq uint64
	mutate(t, path, func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketAnchors).Cursor()
		k, _ := c.Seek(anchorKey("w", 2)) // the second anchor of w
		anchorSeq = binary.BigEndian.Uint64(k[len(k)-8:])
		return tx.Bucket(bucketAnchors).Put(k, posKey(1))
	})
	j, err = OpenBolt(path, &BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, from := range []uint64{1, 2, anchorSeq - 1, anchorSeq} {
		next := from
		err := j.Read(t.Context(), "w", from, func(r Record) error {
			if r.Seq != next {
				t.Fatalf("from %d: got seq %d, want %d", from, r.Seq, next)
			}
			next++
			return nil
		})
		want := fmt.Sprintf("link from the anchor to record %d broken: the step at position 1 holds records 1 to 1", anchorSeq)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Seq != anchorSeq || !strings.Contains(err.Error(), want) {
			t.Fatalf("Read from %d: %v; want a *CorruptError at seq %d containing %q", from, err, anchorSeq, want)
		}
		if next != head.Seq+1 {
			t.Fatalf("Read from %d delivered records up to %d; want all up to %d", from, next-1, head.Seq)
		}
	}
}

// TestUpgradeV1 opens a journal written in format v1 (one bucket per
// world): it is rewritten into the log, every record byte for byte.
func TestUpgradeV1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Record{}
	err = db.Update(func(tx *bbolt.Tx) error {
		top, err := tx.CreateBucket(bucketJournal)
		if err != nil {
			return err
		}
		if err := top.Put(keyFormat, formatV1); err != nil {
			return err
		}
		for _, w := range []struct {
			name string
			n    int
		}{{"a", 3}, {"b", 200}} {
			var es []Entry
			for i := range w.n {
				es = append(es, Entry{Kind: "K", Payload: fmt.Appendf(nil, "%s %d", w.name, i)})
			}
			recs, head, err := encodeEntries(w.name, Head{}, es)
			if err != nil {
				return err
			}
			b, err := tx.CreateBucket(append(bytes.Clone(v1WorldPrefix), w.name...))
			if err != nil {
				return err
			}
			for i, r := range recs {
				if err := b.Put(posKey(uint64(i+1)), r); err != nil {
					return err
				}
				rec, _ := DecodeRecord(r)
				want[w.name] = append(want[w.name], rec)
			}
			d := head.Hash.Digest()
			if err := b.Put(v1HeadKey, append(binary.BigEndian.AppendUint64(nil, head.Seq), d[:]...)); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	if _, err := OpenBolt(path, &BoltOptions{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "open it once read-write") {
		t.Fatalf("read-only open of a v1 journal: %v; want the upgrade hint", err)
	}
	j, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	worlds, err := j.Worlds(t.Context())
	if err != nil || strings.Join(worlds, ",") != "a,b" {
		t.Fatalf("Worlds = %v, %v", worlds, err)
	}
	for name, recs := range want {
		if _, err := Verify(t.Context(), j, name); err != nil {
			t.Fatal(err)
		}
		i := 0
		err := j.Read(t.Context(), name, 1, func(r Record) error {
			if r.Hash != recs[i].Hash || !bytes.Equal(r.Payload, recs[i].Payload) {
				t.Errorf("world %s record %d differs after the upgrade", name, r.Seq)
			}
			i++
			return nil
		})
		if err != nil || i != len(recs) {
			t.Fatalf("world %s: read %d of %d records: %v", name, i, len(recs), err)
		}
	}
	err = j.DB().View(func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte("journal/a")) != nil {
			return errors.New("v1 bucket journal/a is still there")
		}
		if f := tx.Bucket(bucketJournal).Get(keyFormat); !bytes.Equal(f, formatV2) {
			return fmt.Errorf("format %q after the upgrade", f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(t.Context(), "b", Head{Seq: 200, Hash: want["b"][199].Hash}, []Entry{{Kind: "More"}}); err != nil {
		t.Fatalf("append after the upgrade: %v", err)
	}
}
