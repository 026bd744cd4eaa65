package introspect

import (
	"errors"
	"strings"
	"testing"
)

var consistencyTests = []struct {
	in      string
	want    Consistency
	wantErr string // a substring of the error; "" for success
}{
	{"head", Consistency{}, ""},
	{"exact:0", Consistency{Mode: ModeExact}, ""},
	{"exact:12", Consistency{Mode: ModeExact, Height: 12}, ""},
	{"exact:007", Consistency{Mode: ModeExact, Height: 7}, ""},
	{"at_least:1", Consistency{Mode: ModeAtLeast, Height: 1}, ""},
	{"at_least:18446744073709551615", Consistency{Mode: ModeAtLeast, Height: 1<<64 - 1}, ""},
	{"", Consistency{}, `bad consistency "": want "head", "exact:<height>" or "at_least:<height>"`},
	{"HEAD", Consistency{}, `bad consistency "HEAD": want`},
	{"head:3", Consistency{}, `unknown mode "head"`},
	{"exact", Consistency{}, `bad consistency "exact": want`},
	{"exact:", Consistency{}, "the height is missing"},
	{"exact:-1", Consistency{}, `height "-1" is not a decimal number`},
	{"exact:+1", Consistency{}, `height "+1" is not a decimal number`},
	{"exact: 1", Consistency{}, `height " 1" is not a decimal number`},
	{"exact:1.5", Consistency{}, "is not a decimal number"},
	{"exact:0x10", Consistency{}, "is not a decimal number"},
	{"exact:18446744073709551616", Consistency{}, "out of range"},
	{"at-least:3", Consistency{}, `unknown mode "at-least"`},
	{"atleast:3", Consistency{}, `unknown mode "atleast"`},
	{"at_least:", Consistency{}, "the height is missing"},
	{"exact:1:2", Consistency{}, "is not a decimal number"},
	{" head", Consistency{}, "want"},
}

func TestParseConsistency(t *testing.T) {
	for _, tc := range consistencyTests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseConsistency(tc.in)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseConsistency(%q) = %v; want an error containing %q", tc.in, got, tc.wantErr)
				}
				if !errors.Is(err, ErrBadConsistency) {
					t.Errorf("error %v does not wrap ErrBadConsistency", err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q; want it to contain %q", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), "exact:") && !strings.Contains(err.Error(), "out of range") {
					t.Errorf("error %q does not name the accepted forms", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConsistency(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("ParseConsistency(%q) = %+v; want %+v", tc.in, got, tc.want)
			}
			back, err := ParseConsistency(got.String())
			if err != nil || back != got {
				t.Errorf("round trip of %q through %q = %+v, %v", tc.in, got.String(), back, err)
			}
		})
	}
}

func TestConsistencyString(t *testing.T) {
	for _, tc := range []struct {
		c    Consistency
		want string
	}{
		{Consistency{}, "head"},
		{Consistency{Mode: ModeExact, Height: 3}, "exact:3"},
		{Consistency{Mode: ModeAtLeast, Height: 40}, "at_least:40"},
		{Consistency{Mode: Mode(9)}, "head"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%+v.String() = %q; want %q", tc.c, got, tc.want)
		}
	}
}

// FuzzParseConsistency: the parser never panics; what it accepts prints
// back to text that parses to the same value and is the canonical form of
// the input; what it refuses is a ErrBadConsistency that names the forms.
func FuzzParseConsistency(f *testing.F) {
	for _, tc := range consistencyTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConsistency(s)
		if err != nil {
			if !errors.Is(err, ErrBadConsistency) {
				t.Fatalf("ParseConsistency(%q): error %v does not wrap ErrBadConsistency", s, err)
			}
			return
		}
		text := c.String()
		back, err := ParseConsistency(text)
		if err != nil || back != c {
			t.Fatalf("ParseConsistency(%q) = %+v; its text %q parses to %+v, %v", s, c, text, back, err)
		}
		if text != s {
			// Only leading zeros of the height may differ.
			mode, num, _ := strings.Cut(s, ":")
			tmode, tnum, _ := strings.Cut(text, ":")
			trimmed := strings.TrimLeft(num, "0")
			if trimmed == "" {
				trimmed = "0"
			}
			if mode != tmode || trimmed != tnum {
				t.Fatalf("ParseConsistency(%q) = %q: accepted text that is not a form of it", s, text)
			}
		}
	})
}
