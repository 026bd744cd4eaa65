package history

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"default": true, "a.b_c~d-e": true, "A9": true, strings.Repeat("x", 255): true,
		"": false, "a/b": false, "a b": false, "ä": false, `a\b`: false, strings.Repeat("x", 256): false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestDecode(t *testing.T) {
	h, err := Decode(nil)
	if err != nil || h.Latest != 0 || h.Versions == nil {
		t.Fatalf("Decode(nil) = %+v, %v; want the empty history", h, err)
	}
	h.Versions[1] = CommitMeta{RootHash: cas.Sum([]byte("1")), Owner: "a", CreatedAt: 5}
	h.Versions[3] = CommitMeta{RootHash: cas.Sum([]byte("3")), Owner: "b"}
	h.Latest = 1
	v, err := h.Value()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	if back.Latest != 1 || back.Waiting() != 1 {
		t.Errorf("round trip: %+v", back)
	}
	if m, ok := back.Version(1); !ok || m.Owner != "a" || m.CreatedAt != 5 {
		t.Errorf("Version(1) = %+v, %v", m, ok)
	}
	if _, ok := back.Version(3); ok {
		t.Error("Version(3) is waiting, not recorded")
	}
	if _, err := Decode("not a history"); err == nil || !strings.Contains(err.Error(), HistorySchema) {
		t.Errorf("Decode of a string: %v; want an error naming %s", err, HistorySchema)
	}
	if _, err := DecodeCommit(schema.Record("workspace", 3)); err == nil {
		t.Error("DecodeCommit of a bad commit succeeded")
	}
}
