package manpage

import (
	"strings"
	"testing"
)

func TestHeader(t *testing.T) {
	for _, tc := range []struct{ name, manual, want string }{
		{"ls", "User Commands", "LS(1)" + strings.Repeat(" ", 27) + "User Commands" + strings.Repeat(" ", 28) + "LS(1)\n\n"},
		{"x", "", "X(1)" + strings.Repeat(" ", 35) + strings.Repeat(" ", 35) + "X(1)\n\n"},
		{strings.Repeat("a", 40), "M", strings.Repeat("A", 40) + "(1)M " + strings.Repeat("A", 40) + "(1)\n\n"},
	} {
		var b strings.Builder
		Header(&b, tc.name, tc.manual)
		if b.String() != tc.want {
			t.Errorf("Header(%q, %q) = %q; want %q", tc.name, tc.manual, b.String(), tc.want)
		}
		if l := len(strings.TrimSuffix(b.String(), "\n\n")); l < 78 && len(tc.name) < 30 {
			t.Errorf("Header(%q, %q) is %d columns; want 78", tc.name, tc.manual, l)
		}
	}
}

func TestSection(t *testing.T) {
	var b strings.Builder
	Section(&b, "NAME", "ls - list", "", "more")
	Section(&b, "EMPTY")
	want := "NAME\n       ls - list\n       \n       more\n\nEMPTY\n\n"
	if b.String() != want {
		t.Errorf("Section = %q; want %q", b.String(), want)
	}
}
