package escape

import (
	"strings"
	"testing"
)

func TestPrintf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		all  bool
		out  string
		n    int
		stop bool
	}{
		{`\n rest`, false, "\n", 2, false},
		{`plain`, false, "", 0, false},
		{`\101B`, false, "A", 4, false},
		{`\0101`, false, "\x08", 4, false}, // a format's \NNN takes three digits, the 0 one of them
		{`\0101`, true, "A", 5, false},     // %b's \0NNN takes three after the 0
		{`\x41\x4g\xz`, true, "A\x04g\\xz", 11, false},
		{`\u00e9\U0001F600\u`, true, "é😀\\u", 18, false},
		{`a\cb`, true, "a", 3, true},
		{`\c`, false, `\c`, 2, false},
		{`\'\"\?\q`, true, `\'"?\q`, 8, false},
		{`x\`, true, `x\`, 2, false},
	} {
		out, n, stop := Printf(tc.in, tc.all)
		if out != tc.out || n != tc.n || stop != tc.stop {
			t.Errorf("Printf(%q, %v) = %q, %d, %v; want %q, %d, %v", tc.in, tc.all, out, n, stop, tc.out, tc.n, tc.stop)
		}
	}
}

func TestNumeric(t *testing.T) {
	for _, tc := range []struct {
		s      string
		letter byte
		out    string
		n      int
	}{
		{"41z", 'x', "A", 2},
		{"414", 'x', "A", 2},
		{"g", 'x', `\x`, 0},
		{"e9", 'u', "é", 2},
		{"00e9x", 'u', "é", 4},
		{"0001F600", 'U', "😀", 8},
		{"", 'U', `\U`, 0},
	} {
		var b strings.Builder
		n := Numeric(&b, tc.s, tc.letter)
		if b.String() != tc.out || n != tc.n {
			t.Errorf("Numeric(%q, %c) = %q, %d; want %q, %d", tc.s, tc.letter, b.String(), n, tc.out, tc.n)
		}
	}
}

func FuzzPrintf(f *testing.F) {
	for _, s := range []string{`\n`, `\0777`, `\x`, `\u12345`, `\U0010FFFF`, `a\cb`, `\`} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, all bool) {
		_, n, _ := Printf(s, all)
		if n < 0 || n > len(s) {
			t.Fatalf("Printf(%q, %v) consumed %d of %d bytes", s, all, n, len(s))
		}
	})
}
