package cli

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

func TestEscapeControls(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, 21°C ✓\n\tindented", "plain text, 21°C ✓\n\tindented"},
		{"\x1b]52;c;aGVsbG8=\x07", `\x1b]52;c;aGVsbG8=\x07`},
		{"\x1b[2J\x1b[Hhidden", `\x1b[2J\x1b[Hhidden`},
		{"over\rwrite", `over\rwrite`},
		{"crlf\r\nline", "crlf\r\nline"},
		{"back\bspace\x7f", `back\bspace\x7f`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202eevil\u2066", `bidi \u202eevil\u2066`},
		{"bad utf-8 \xff\xfe", `bad utf-8 \xff\xfe`},
		{"", ""},
	} {
		if got := escapeControls(tc.in); got != tc.want {
			t.Errorf("escapeControls(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzEscapingWriter: whatever the text and however it is cut into
// writes, what reaches the terminal has no control character, and is what
// escapeControls makes of the whole.
func FuzzEscapingWriter(f *testing.F) {
	f.Add("\x1b]52;c;aGVsbG8=\x07 and 21°C ✓\r\n", uint8(3))
	f.Add("é\u009b\u202e\r", uint8(1))
	f.Fuzz(func(t *testing.T, s string, step uint8) {
		var out bytes.Buffer
		w := &escapingWriter{w: &out}
		n := int(step%7) + 1
		for i := 0; i < len(s); i += n {
			if _, err := w.Write([]byte(s[i:min(i+n, len(s))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if want := escapeControls(s); got != want {
			t.Fatalf("written in pieces of %d: %q; escapeControls gives %q", n, got, want)
		}
		for i, r := range got {
			if r == '\r' && strings.HasPrefix(got[i:], "\r\n") {
				continue
			}
			if isControl(r) || (r == utf8.RuneError && !strings.Contains(s, "\uFFFD")) {
				t.Fatalf("%q reaches the terminal in %q", r, got)
			}
		}
	})
}

// TestRunEscapesControls: an answer, a tool's output and an error that
// hold terminal control sequences (OSC 52 writes the clipboard) are shown
// escaped by run and trace, and as they are with --raw.
func TestRunEscapesControls(t *testing.T) {
	const osc52 = "\x1b]52;c;aGVsbG8=\x07"
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "printf 'out \\033[2Jcleared\\n'"}`}}},
		{Text: "Done " + osc52 + " here."},
	}
	srv := llmtest.NewServer(llmtest.Script{Turns: append(turns, turns...)})
	defer srv.Close()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test"}
	store := t.TempDir()
	args := []string{"--store", store, "run", "../examples/demiurge", "--model", "gpt-test", "-m", "go"}
	r := run(t, env, "", args...)
	if r.code != exitOK || strings.ContainsRune(r.stdout, 0x1b) || !strings.Contains(r.stdout, `Done \x1b]52;c;aGVsbG8=\x07 here.`) ||
		!strings.Contains(r.stdout, `out \x1b[2Jcleared`) {
		t.Errorf("run: exit %d; want the controls escaped:\n%q", r.code, r.stdout)
	}
	tr := run(t, nil, "", "--store", store, "trace")
	if strings.ContainsRune(tr.stdout, 0x1b) || !strings.Contains(tr.stdout, `\x1b]52;c;aGVsbG8=\x07`) || !strings.Contains(tr.stdout, `\x1b[2Jcleared`) {
		t.Errorf("trace: want the controls escaped:\n%q", tr.stdout)
	}
	if tr := run(t, nil, "", "--store", store, "trace", "--raw"); !strings.Contains(tr.stdout, osc52) {
		t.Errorf("trace --raw: want the controls as they are:\n%q", tr.stdout)
	}
	r = run(t, env, "", append(args, "--raw")...)
	if r.code != exitOK || !strings.Contains(r.stdout, "Done "+osc52+" here.") || !strings.Contains(r.stdout, "out \x1b[2Jcleared") {
		t.Errorf("run --raw: exit %d; want the controls as they are:\n%q", r.code, r.stdout)
	}

	// An error that quotes a model server's words (the adapter drops
	// their controls), and the error line.
	srv2 := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Status: 400, Error: &llmtest.ErrorBody{Message: "bad " + osc52}}}})
	defer srv2.Close()
	env["OPENAI_BASE_URL"] = srv2.URL
	r = run(t, env, "", args...)
	if strings.ContainsRune(r.stdout, 0x1b) || !strings.Contains(r.stdout, "bad ") {
		t.Errorf("a model error: want the controls escaped:\n%q", r.stdout)
	}
	r = run(t, env, "", "--store", store, "run", "../examples/\x1b[31mnope", "-m", "go")
	if r.code != exitFailure || strings.ContainsRune(r.stderr, 0x1b) || !strings.Contains(r.stderr, `examples/\x1b[31mnope`) {
		t.Errorf("an error line: exit %d; want the controls escaped:\n%q", r.code, r.stderr)
	}
}
