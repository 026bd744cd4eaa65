package preview

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
)

func TestText(t *testing.T) {
	long := strings.Repeat("a", Max+10)
	euro := strings.Repeat("a", Max-1) + "€€" // a 3-byte rune straddles Max
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"hello", "hello"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{long[:Max], long[:Max]},
		{long, long[:Max] + "…"},
		{euro, strings.Repeat("a", Max-1) + "…"},
	} {
		got := Text([]byte(tc.in))
		if got != tc.want {
			t.Errorf("Text(%q) = %q; want %q", tc.in, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Text(%q) = %q is not UTF-8", tc.in, got)
		}
	}
}

func TestOf(t *testing.T) {
	ctx := context.Background()
	store := cas.NewMemory()
	ref, err := store.Put(ctx, []byte(`{"ok": true}`))
	if err != nil {
		t.Fatal(err)
	}
	c := &reducer.Context{CAS: store}
	if got, err := Of(c, ref.String()); err != nil || got != `{"ok": true}` {
		t.Errorf("Of = %q, %v", got, err)
	}
	missing := cas.Sum([]byte("nowhere")).String()
	for _, tc := range []struct {
		c   *reducer.Context
		ref string
	}{
		{c, "blake3:xyz"},
		{c, missing},
		{&reducer.Context{}, ref.String()},
		{nil, ref.String()},
	} {
		if got, err := Of(tc.c, tc.ref); err == nil {
			t.Errorf("Of(%s) = %q; want an error", tc.ref, got)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "hello", "bad \xff byte", strings.Repeat("é", 60), strings.Repeat("a", 79) + "€€"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := Text(data)
		if !utf8.ValidString(got) {
			t.Fatalf("Text(%q) = %q is not UTF-8", data, got)
		}
		body, cut := strings.CutSuffix(got, "…")
		if len(data) <= Max && cut && !strings.HasSuffix(string(data), "…") {
			t.Fatalf("Text(%q) = %q: cut a short blob", data, got)
		}
		if len(data) > Max && (!cut || len(body) > 3*Max) {
			t.Fatalf("Text(%q) = %q: a long blob must be cut short", data, got)
		}
		if utf8.Valid(data) && !strings.HasPrefix(string(data), body) {
			t.Fatalf("Text(%q) = %q is not a prefix of valid text", data, got)
		}
	})
}
