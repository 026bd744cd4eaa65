package levenshtein

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"grep", "grep", 0},
		{"gerp", "grep", 2},
		{"kitten", "sitting", 3},
		{"flaw", "lawn", 2},
		{"introspect_stat", "introspect_state", 1},
		{"é", "e", 2}, // bytes, not characters
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d; want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}
