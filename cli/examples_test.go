package cli

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestExamples checks that every command's help has an Examples section,
// and that every demiurge command line in it names a command, with flags it
// has and arguments it takes (what they do is checked by the scripts in
// testdata/script, and by hand).
func TestExamples(t *testing.T) {
	t.Parallel()
	tree := newTestRoot()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Hidden || c.Name() == "help" {
			return
		}
		t.Run(c.CommandPath(), func(t *testing.T) {
			if strings.TrimSpace(c.Example) == "" {
				t.Fatalf("%s has no Example", c.CommandPath())
			}
			lines := exampleCommands(c.Example)
			if len(lines) == 0 {
				t.Fatalf("%s: no demiurge command line in its Example:\n%s", c.CommandPath(), c.Example)
			}
			for _, words := range lines {
				checkExample(t, words)
			}
		})
	}
	walk(tree)
}

// newTestRoot is a command tree that writes nowhere.
func newTestRoot() *cobra.Command {
	a := &app{stdio: stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard}, log: slog.New(slog.DiscardHandler)}
	return newRootCommand(a, func(string) string { return "" })
}

// checkExample parses one example command line with a fresh command tree.
func checkExample(t *testing.T, words []string) {
	t.Helper()
	root := newTestRoot()
	c, rest, err := root.Find(words[1:])
	if err != nil {
		t.Errorf("%q: %v", words, err)
		return
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Errorf("%q: %s: %v", words, c.CommandPath(), err)
		return
	}
	if c.Args != nil {
		if err := c.Args(c, c.Flags().Args()); err != nil {
			t.Errorf("%q: %s: %v", words, c.CommandPath(), err)
		}
	}
}

func TestExampleCommands(t *testing.T) {
	t.Parallel()
	got := exampleCommands(`  # a comment: demiurge is not run here
  ref=$(demiurge cas put notes.txt)
  demiurge cas get --json "$ref" > copy.txt
  echo hi | demiurge sh -c 'echo "a | b"; echo c' | wc -l
  demiurge cas stat "$(demiurge cas put notes.txt)"
  demiurge completion zsh > "${fpath[1]}/_demiurge"
  demiurge approve examples/demiurge   # a comment`)
	want := [][]string{
		{"demiurge", "cas", "put", "notes.txt"},
		{"demiurge", "cas", "get", "--json", "$ref"},
		{"demiurge", "sh", "-c", `echo "a | b"; echo c`},
		{"demiurge", "cas", "stat", "$(demiurge cas put notes.txt)"},
		{"demiurge", "cas", "put", "notes.txt"},
		{"demiurge", "completion", "zsh"},
		{"demiurge", "approve", "examples/demiurge"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %q; want %q", got, want)
	}
	for i := range want {
		if strings.Join(got[i], "\x00") != strings.Join(want[i], "\x00") {
			t.Errorf("command %d: got %q; want %q", i, got[i], want[i])
		}
	}
}

// exampleCommands returns the demiurge command lines of an Example, as
// words: each that starts a line, follows a pipe or starts a $( … ), up
// to the end of its simple command. Comment lines are skipped.
func exampleCommands(example string) [][]string {
	var out [][]string
	for line := range strings.Lines(example) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		for i := 0; i < len(line); i++ {
			if !strings.HasPrefix(line[i:], "demiurge ") || i > 0 && !strings.ContainsRune(" ($|", rune(line[i-1])) {
				continue
			}
			if words := shellWords(line[i:]); len(words) > 0 {
				out = append(out, words)
			}
		}
	}
	return out
}

// shellWords splits s into words as a shell would, with single and double
// quotes, up to the first |, ;, >, <, & or ) outside quotes, or a comment.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
				continue
			}
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord: // a comment
			return words
		case strings.ContainsRune("|;><&)", r):
			if inWord {
				words = append(words, w.String())
			}
			return words
		case unicode.IsSpace(r):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestHelpText checks what every command's help shows: its long text fits
// 80 columns, as does the REPL's /help, and no flag's usage repeats its
// placeholder ("--from NAME the world to fork (NAME)": the placeholder is
// the back-quoted word of the usage, which pflag shows beside the flag
// and without its quotes in the text, so it belongs in the sentence).
func TestHelpText(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		// cobra writes the completion commands' help.
		if c.Name() == "help" || c.Parent() != nil && c.Parent().Name() == "completion" {
			return
		}
		for line := range strings.Lines(c.Long) {
			if line = strings.TrimSuffix(line, "\n"); utf8.RuneCountInString(line) > 80 {
				t.Errorf("%s: a line of its help is %d columns wide, over 80: %q", c.CommandPath(), utf8.RuneCountInString(line), line)
			}
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if name, usage := pflag.UnquoteUsage(f); name != "" && strings.Contains(usage, "("+name+")") {
				t.Errorf("%s --%s: the usage %q repeats its placeholder %s", c.CommandPath(), f.Name, usage, name)
			}
		})
	}
	walk(newTestRoot())
	for line := range strings.Lines(slashHelp()) {
		if line = strings.TrimSuffix(line, "\n"); utf8.RuneCountInString(line) > 80 {
			t.Errorf("/help: a line is %d columns wide, over 80: %q", utf8.RuneCountInString(line), line)
		}
	}
}
