package cli

import "testing"

func TestStatusDetail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ status, output, want string }{
		{"error", `error: there is no tool named "x". Available tools: a.`, `there is no tool named "x". Available tools: a.`},
		{"error", "error (exit 1)\ncat: nope: no such file", "(exit 1)\ncat: nope: no such file"},
		{"error", "error (exit 2, syntax error)", "(exit 2, syntax error)"},
		{"denied", "denied: tool bash is not allowed", "tool bash is not allowed"},
		{"not_run", "not run: the turn was stopped", "the turn was stopped"},
		{"timeout", "timeout: the call took longer than 30s", "the call took longer than 30s"},
		{"error", "errors were found", "errors were found"}, // not the status word
		{"error", "something else", "something else"},
	} {
		if got := statusDetail(tc.status, tc.output); got != tc.want {
			t.Errorf("statusDetail(%q, %q) = %q; want %q", tc.status, tc.output, got, tc.want)
		}
	}
}

func TestMSDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ms   float64
		want string
	}{
		{12420.6, "12.421s"},
		{2, "2ms"},
		{0.35, "0.35ms"},
		{0.041, "41µs"},
		{0, "0s"},
		{1500, "1.5s"},
	} {
		if got := msDuration(tc.ms); got != tc.want {
			t.Errorf("msDuration(%v) = %q; want %q", tc.ms, got, tc.want)
		}
	}
}
