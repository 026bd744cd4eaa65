package coreutils

import (
	"os/exec"
	"strings"
	"testing"
)

// TestGrepCountSearcher checks the whole-input search of -c, -l and -q
// against matching line by line and, when installed, GNU grep.
func TestGrepCountSearcher(t *testing.T) {
	inputs := []string{
		"", "\n", "a\n", "abc\nxbc\n\nab", "foo bar\nbarfoo\nfoo\n\nFOO\n", "1\n12\n123\n19\n9\n",
		strings.Repeat("x\n", 20000) + "needle 9\n" + strings.Repeat("y\n", 20000) + "9",
	}
	patterns := [][]string{
		{"-c", "a"}, {"-c", "bc"}, {"-c", "^$"}, {"-c", "^1.*9$"}, {"-c", "foo$"}, {"-c", "^foo"},
		{"-ci", "foo"}, {"-cv", "foo"}, {"-cvE", "^$"}, {"-cw", "foo"}, {"-cx", "foo"}, {"-c", "9"},
		{"-cE", "x|9"}, {"-c", ""}, {"-cF", "a.c"}, {"-cE", "[^a]"}, {"-cE", "b+"}, {"-cm1", "9"},
		{"-cvm1", "x"}, {"-c", "-e", "bar", "-e", "1"}, {"-cE", "\\bfoo\\b"}, {"-l", "needle"}, {"-q", "FOO"},
		{"-c", "needle 9"}, {"-cE", "a?"}, {"-cE", "o{2}"}, {"-ciF", "Foo"}, {"-cE", "(^|b)a"},
	}
	gnu, _ := exec.LookPath("grep")
	for _, in := range inputs {
		for _, args := range patterns {
			out, errOut, status := runCmd(t, t.Context(), "grep", args, in, &Env{MaxInputBytes: 1 << 22})
			lineOut, _, lineStatus := runGrepLineByLine(t, args, in)
			short := in
			if len(short) > 40 {
				short = short[:40] + "…"
			}
			if out != lineOut || status != lineStatus {
				t.Errorf("grep %q <<< %q: %q (%d), line by line %q (%d); stderr %q", args, short, out, status, lineOut, lineStatus, errOut)
			}
			if gnu != "" {
				cmd := exec.Command(gnu, args...)
				cmd.Stdin = strings.NewReader(in)
				cmd.Env = []string{"LC_ALL=C"}
				gnuOut, _ := cmd.Output()
				if out != string(gnuOut) {
					t.Errorf("grep %q <<< %q: %q, GNU grep %q", args, short, out, gnuOut)
				}
			}
		}
	}
}

// runGrepLineByLine runs grep with the whole-input search turned off.
func runGrepLineByLine(t *testing.T, args []string, in string) (string, string, int) {
	grepLineByLine = true
	defer func() { grepLineByLine = false }()
	return runCmd(t, t.Context(), "grep", args, in, &Env{MaxInputBytes: 1 << 22})
}
