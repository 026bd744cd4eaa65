package journal_test

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/journal"
)

func TestDecodeRecords(t *testing.T) {
	var seq []byte
	var want []journal.Record
	prev := journal.Genesis("w")
	for i, kind := range []string{"Manifest", "DomainEvent", "State"} {
		r := journal.Record{Seq: uint64(i + 1), Kind: kind, Payload: []byte(kind), Prev: prev}
		b, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		r, err = journal.DecodeRecord(b)
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, b...)
		want = append(want, r)
		prev = r.Hash
	}
	var got []journal.Record
	for r, err := range journal.DecodeRecords(seq) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || got[i].Kind != want[i].Kind || got[i].Hash != want[i].Hash || got[i].Prev != want[i].Prev {
			t.Errorf("record %d = %+v, want %+v", i+1, got[i], want[i])
		}
	}
	// A cut sequence yields its whole records, then an error, and ends.
	n, errs := 0, 0
	for _, err := range journal.DecodeRecords(seq[:len(seq)-3]) {
		if err != nil {
			errs++
			continue
		}
		n++
	}
	if n != 2 || errs != 1 {
		t.Errorf("a cut sequence gave %d records and %d errors, want 2 and 1", n, errs)
	}
	// Stopping early stops it.
	for range journal.DecodeRecords(seq) {
		break
	}
	// Nothing is nothing.
	for r, err := range journal.DecodeRecords(nil) {
		t.Errorf("empty input yielded %v, %v", r, err)
	}
	if _, err := journal.DecodeRecord(append([]byte("x"), seq...)); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Errorf("bad prefix: %v", err)
	}
}
