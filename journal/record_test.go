package journal_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// goldenRecord pins the stored form: {seq 1, kind "k", payload "p", prev
// Genesis("w")}, keys in canonical order seq, kind, prev, payload.
const goldenRecord = "d9d9f7" + "a4" +
	"63736571" + "01" +
	"646b696e64" + "616b" +
	"6470726576" + "5820" + "7ec062743ca6568472da3f617461f1a103e4f9d5ed03748de553ee4636194e17" +
	"677061796c6f6164" + "4170"

func TestGenesis(t *testing.T) {
	if got, want := journal.Genesis("w"), cas.Sum([]byte("demiurge/journal/v1\x00w")); got != want {
		t.Fatalf("Genesis(w) = %s; want %s", got, want)
	}
	if journal.Genesis("w") == journal.Genesis("w2") {
		t.Fatal("two worlds share a genesis hash")
	}
}

func TestEncodeGolden(t *testing.T) {
	rec := journal.Record{Seq: 1, Kind: "k", Payload: []byte("p"), Prev: journal.Genesis("w")}
	b, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(b); got != goldenRecord {
		t.Fatalf("Encode() = %s; want %s", got, goldenRecord)
	}
	// The same record as a plain map through the canonical codec.
	d := rec.Prev.Digest()
	viaMap, err := cas.Marshal(map[string]any{"seq": uint64(1), "kind": "k", "payload": []byte("p"), "prev": d[:]})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(viaMap, b) {
		t.Fatalf("cas.Marshal of the map = %x; want %x", viaMap, b)
	}
	if err := cas.CheckCanonical(b); err != nil {
		t.Fatalf("CheckCanonical: %v", err)
	}
}

// recordCases are valid records for the round-trip test and fuzz seeds.
var recordCases = []journal.Record{
	{Seq: 1, Kind: "k", Payload: []byte("p"), Prev: journal.Genesis("w")},
	{Seq: 23, Kind: "DomainEvent", Payload: nil, Prev: cas.Sum([]byte("x"))},
	{Seq: 24, Kind: "ünï", Payload: []byte{}, Prev: cas.Sum([]byte("y"))},
	{Seq: 255, Kind: strings.Repeat("k", 23), Payload: make([]byte, 23), Prev: cas.Sum(nil)},
	{Seq: 256, Kind: strings.Repeat("k", 24), Payload: make([]byte, 24), Prev: cas.Sum(nil)},
	{Seq: 1 << 16, Kind: strings.Repeat("k", journal.MaxKindLen), Payload: make([]byte, 1<<16), Prev: cas.Sum(nil)},
	{Seq: 1<<32 + 1, Kind: "x", Payload: bytes.Repeat([]byte{0xff}, 300), Prev: cas.Sum(nil)},
	{Seq: ^uint64(0), Kind: "max", Payload: []byte{0xd9, 0xd9, 0xf7}, Prev: cas.Sum(nil)},
}

func TestRecordRoundTrip(t *testing.T) {
	for _, rec := range recordCases {
		b, err := rec.Encode()
		if err != nil {
			t.Fatalf("Encode(seq %d): %v", rec.Seq, err)
		}
		got, err := journal.DecodeRecord(b)
		if err != nil {
			t.Fatalf("DecodeRecord(seq %d): %v", rec.Seq, err)
		}
		if got.Seq != rec.Seq || got.Kind != rec.Kind || !bytes.Equal(got.Payload, rec.Payload) || got.Prev != rec.Prev || got.Hash != cas.Sum(b) {
			t.Fatalf("round trip of seq %d: got %+v; want %+v with hash %s", rec.Seq, got, rec, cas.Sum(b))
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  journal.Record
		want string
	}{
		{"seq 0", journal.Record{Kind: "k", Prev: cas.Sum(nil)}, "seq 0"},
		{"empty kind", journal.Record{Seq: 1, Prev: cas.Sum(nil)}, "empty kind"},
		{"bad kind", journal.Record{Seq: 1, Kind: "\xff", Prev: cas.Sum(nil)}, "not valid UTF-8"},
		{"zero prev", journal.Record{Seq: 1, Kind: "k"}, "not a BLAKE3 ref"},
		{"sha256 prev", journal.Record{Seq: 1, Kind: "k", Prev: cas.RefFromDigest(cas.SHA256, [32]byte{})}, "not a BLAKE3 ref"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.rec.Encode()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Encode() error %v; want one containing %q", err, tc.want)
			}
		})
	}
}

// decodeErrorCases are bad record bytes (hex, spaces ignored) and a part of
// the error each must give.
var decodeErrorCases = []struct {
	name, hex, want string
}{
	{"empty", "", "missing self-describe prefix"},
	{"no prefix", "a4 63736571 01", "missing self-describe prefix"},
	{"prefix only", "d9d9f7", "at byte 3: truncated: want map header"},
	{"array", "d9d9f7 84", "map header: want CBOR major type 5, got 4"},
	{"map of 3", "d9d9f7 a3", "map has 3 entries, want 4"},
	{"indefinite map", "d9d9f7 bf", "indefinite length"},
	{"wrong first key", "d9d9f7 a4 646b696e64", `at byte 4: want key "seq"`},
	{"seq 0", "d9d9f7 a4 63736571 00", "seq is 0"},
	{"seq not shortest", "d9d9f7 a4 63736571 1805", "not in its shortest form"},
	{"seq 2 bytes not shortest", "d9d9f7 a4 63736571 1900ff", "not in its shortest form"},
	{"negative seq", "d9d9f7 a4 63736571 20", "seq: want CBOR major type 0, got 1"},
	{"seq truncated", "d9d9f7 a4 63736571 1b0000", "truncated: seq needs 8 more bytes"},
	{"kind as bytes", "d9d9f7 a4 63736571 01 646b696e64 416b", "kind: want CBOR major type 3, got 2"},
	{"empty kind", "d9d9f7 a4 63736571 01 646b696e64 60", "empty kind"},
	{"kind invalid UTF-8", "d9d9f7 a4 63736571 01 646b696e64 61ff", "kind is not valid UTF-8"},
	{"kind too long", "d9d9f7 a4 63736571 01 646b696e64 790101", "kind is 257 bytes, at most 256 allowed"},
	{"kind truncated", "d9d9f7 a4 63736571 01 646b696e64 656b", "truncated: kind is 5 bytes, only 1 left"},
	{"keys out of order", "d9d9f7 a4 63736571 01 6470726576", `want key "kind"`},
	{"prev short", "d9d9f7 a4 63736571 01 646b696e64 616b 6470726576 5f", "indefinite length"},
	{"prev 31 bytes", "d9d9f7 a4 63736571 01 646b696e64 616b 6470726576 581f" + strings.Repeat("00", 31), "prev is 31 bytes, want 32"},
	{"prev 33 bytes", "d9d9f7 a4 63736571 01 646b696e64 616b 6470726576 5821" + strings.Repeat("00", 33), "prev is 33 bytes, at most 32 allowed"},
	{"payload missing", "d9d9f7 a4 63736571 01 646b696e64 616b 6470726576 5820" + strings.Repeat("00", 32), "want key \"payload\""},
	{"payload truncated", "d9d9f7 a4 63736571 01 646b696e64 616b 6470726576 5820" + strings.Repeat("00", 32) + "677061796c6f6164 4270", "truncated: payload is 2 bytes, only 1 left"},
	{"payload huge length", "d9d9f7 a4 63736571 01 646b696e64 616b 6470726576 5820" + strings.Repeat("00", 32) + "677061796c6f6164 5bffffffffffffffff", "payload is 18446744073709551615 bytes, at most 16777216 allowed"},
	{"payload null", "d9d9f7 a4 63736571 01 646b696e64 616b 6470726576 5820" + strings.Repeat("00", 32) + "677061796c6f6164 f6", "payload: want CBOR major type 2, got 7"},
	{"trailing bytes", goldenRecord + "00", "1 trailing bytes"},
	{"truncated golden", goldenRecord[:len(goldenRecord)-2], "truncated"},
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range decodeErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := hex.DecodeString(strings.ReplaceAll(tc.hex, " ", ""))
			if err != nil {
				t.Fatalf("bad test hex: %v", err)
			}
			_, err = journal.DecodeRecord(b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeRecord(%s) error %v; want one containing %q", tc.hex, err, tc.want)
			}
		})
	}
}

// FuzzDecodeRecord checks that DecodeRecord never panics, and that what it
// accepts is canonical CBOR that re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	for _, rec := range recordCases {
		b, err := rec.Encode()
		if err != nil {
			f.Fatal(err)
		}
		if len(b) < 1024 { // big seeds make minimization crawl
			f.Add(b)
		}
	}
	for _, tc := range decodeErrorCases {
		b, _ := hex.DecodeString(strings.ReplaceAll(tc.hex, " ", ""))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := journal.DecodeRecord(data)
		if err != nil {
			return
		}
		again, err := rec.Encode()
		if err != nil {
			t.Fatalf("decoded record %+v does not encode: %v", rec, err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("failed to roundtrip:\n in  %x\n out %x", data, again)
		}
		if rec.Hash != cas.Sum(data) {
			t.Fatalf("Hash %s; bytes hash to %s", rec.Hash, cas.Sum(data))
		}
		if err := cas.CheckCanonical(data); err != nil {
			t.Fatalf("accepted bytes are not canonical for the cas codec: %v", err)
		}
	})
}

// FuzzRecordRoundTrip checks Encode against DecodeRecord and against the
// cas codec on arbitrary fields.
func FuzzRecordRoundTrip(f *testing.F) {
	for _, rec := range recordCases {
		if len(rec.Payload) < 1024 { // big seeds make minimization crawl
			d := rec.Prev.Digest()
			f.Add(rec.Seq, rec.Kind, rec.Payload, d[:])
		}
	}
	f.Fuzz(func(t *testing.T, seq uint64, kind string, payload, prev []byte) {
		var d [32]byte
		copy(d[:], prev)
		rec := journal.Record{Seq: seq, Kind: kind, Payload: payload, Prev: cas.RefFromDigest(cas.BLAKE3, d)}
		b, err := rec.Encode()
		if err != nil {
			return
		}
		got, err := journal.DecodeRecord(b)
		if err != nil {
			t.Fatalf("DecodeRecord(Encode(%+v)): %v", rec, err)
		}
		if got.Seq != seq || got.Kind != kind || !bytes.Equal(got.Payload, payload) || got.Prev != rec.Prev {
			t.Fatalf("round trip: got %+v; want %+v", got, rec)
		}
		viaMap, err := cas.Marshal(map[string]any{"seq": seq, "kind": kind, "payload": append([]byte{}, payload...), "prev": d[:]})
		if err != nil || !bytes.Equal(viaMap, b) {
			t.Fatalf("cas.Marshal of the map = %x, %v; Encode = %x", viaMap, err, b)
		}
	})
}
