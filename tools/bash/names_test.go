package bash

import (
	"regexp"
	"testing"
)

// FuzzNames: isToolName and isEnvName accept what the regexps they
// replace accept.
func FuzzNames(f *testing.F) {
	toolRE := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	envRE := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	for _, s := range []string{"", "a", "_", "A9", "9a", "a.b-c", ".a", "-a", "a b", "é", "a\n", "read_file", "x.", "ÿ", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isToolName(s), toolRE.MatchString(s); got != want {
			t.Errorf("isToolName(%q) = %v, want %v", s, got, want)
		}
		if got, want := isEnvName(s), envRE.MatchString(s); got != want {
			t.Errorf("isEnvName(%q) = %v, want %v", s, got, want)
		}
	})
}
