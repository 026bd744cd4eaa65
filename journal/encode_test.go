package journal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// recordNode is the stored form of a record as a Go struct: cas.Marshal of
// it is the reference encodeRecord is held to.
type recordNode struct {
	Seq     uint64 `cbor:"seq"`
	Kind    string `cbor:"kind"`
	Payload []byte `cbor:"payload"`
	Prev    []byte `cbor:"prev"`
}

// TestEncodeRecordBytes: encodeRecord, which writes a record's map by
// hand, gives cas.Marshal's canonical bytes for every size of seq, kind
// and payload, and DecodeRecord reads them back.
func TestEncodeRecordBytes(t *testing.T) {
	var prev [cas.Size]byte
	for i := range prev {
		prev[i] = byte(i * 7)
	}
	seqs := []uint64{1, 23, 24, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1<<64 - 1}
	kinds := []string{"State", "DomainEvent", strings.Repeat("k", 23), strings.Repeat("k", 24), strings.Repeat("k", 64)}
	var payloads [][]byte
	for _, n := range []int{0, 1, 23, 24, 255, 256, 65535, 65536, 70000} {
		payloads = append(payloads, bytes.Repeat([]byte{0xab}, n))
	}
	for _, seq := range seqs {
		for _, kind := range kinds {
			for _, p := range payloads {
				got, err := encodeRecord(seq, kind, p, prev)
				if err != nil {
					t.Fatal(err)
				}
				want, err := cas.Marshal(recordNode{Seq: seq, Kind: kind, Payload: p, Prev: prev[:]})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("seq %d, kind %q, payload of %d bytes: %x; cas.Marshal gives %x", seq, kind, len(p), got[:min(len(got), 64)], want[:min(len(want), 64)])
				}
				if len(got) != cap(got) {
					t.Errorf("seq %d, kind %q, payload of %d bytes: %d bytes in a buffer of %d", seq, kind, len(p), len(got), cap(got))
				}
				r, err := DecodeRecord(got)
				if err != nil || r.Seq != seq || r.Kind != kind || !bytes.Equal(r.Payload, p) || r.Prev.Digest() != prev {
					t.Fatalf("seq %d, kind %q: decoded %+v, %v", seq, kind, r, err)
				}
			}
		}
	}
	// A nil payload is the empty byte string, never CBOR null.
	a, _ := encodeRecord(1, "State", nil, prev)
	b, _ := encodeRecord(1, "State", []byte{}, prev)
	if !bytes.Equal(a, b) {
		t.Error("a nil payload encodes unlike an empty one")
	}
}

func BenchmarkEncodeRecord(b *testing.B) {
	var prev [cas.Size]byte
	payload := bytes.Repeat([]byte{1}, 200)
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeRecord(12345, "State", payload, prev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cas.Marshal(recordNode{Seq: 12345, Kind: "State", Payload: payload, Prev: prev[:]}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
