package mcp

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/demiurge-dev/demiurge/tools"
)

var cappedTests = []struct {
	limit  int
	pieces []string
	want   string
}{
	{10, nil, ""},
	{10, []string{"hello"}, "hello"},
	{5, []string{"hello"}, "hello"},
	{4, []string{"hello"}, "hell\n[output cut at 4 of 5 bytes]"},
	{5, []string{"he", "llo", "!"}, "hello\n[output cut at 5 of 6 bytes]"},
	{3, []string{"aé"}, "aé"},
	{2, []string{"aé"}, "a\n[output cut at 1 of 3 bytes]"},
	{0, []string{"x"}, "\n[output cut at 0 of 1 bytes]"},
	{4, []string{"€€"}, "€\n[output cut at 3 of 6 bytes]"},
	{5, []string{"ab", "😀😀"}, "ab\n[output cut at 2 of 10 bytes]"},
	{7, []string{"ab", "😀😀"}, "ab😀\n[output cut at 6 of 10 bytes]"},
	{6, []string{"ab", "😀😀", "cd"}, "ab😀\n[output cut at 6 of 12 bytes]"},
}

func TestCapped(t *testing.T) {
	for _, tc := range cappedTests {
		c := newCapped(tc.limit)
		for _, p := range tc.pieces {
			c.WriteString(p)
		}
		if got := c.String(); got != tc.want {
			t.Errorf("limit %d, %q: got %q; want %q", tc.limit, tc.pieces, got, tc.want)
		}
	}
}

// FuzzCapped checks that a capped builder keeps a prefix of what was
// written, never more than its limit, cut on a character boundary, and
// says the size of everything.
func FuzzCapped(f *testing.F) {
	for _, tc := range cappedTests {
		f.Add(tc.limit, strings.Join(tc.pieces, "\x00"))
	}
	f.Fuzz(func(t *testing.T, limit int, joined string) {
		if limit < 0 || limit > 1<<16 || !utf8.ValidString(joined) {
			t.Skip()
		}
		pieces := strings.Split(joined, "\x00")
		c := newCapped(limit)
		for _, p := range pieces {
			c.WriteString(p)
		}
		all := strings.Join(pieces, "")
		got := c.String()
		if !c.Cut() {
			if got != all {
				t.Fatalf("uncut %q; wrote %q", got, all)
			}
			return
		}
		kept, note, ok := strings.Cut(got, "\n[output cut at ")
		if !ok || len(kept) > limit || !strings.HasPrefix(all, kept) || !utf8.ValidString(kept) {
			t.Fatalf("limit %d, wrote %q: got %q", limit, all, got)
		}
		if want := fmt.Sprintf("%d of %d bytes]", len(kept), len(all)); note != want {
			t.Fatalf("note %q; want %q", note, want)
		}
	})
}

func TestTail(t *testing.T) {
	tl := newTail(16)
	fmt.Fprint(tl, "line one\nline two\n")
	fmt.Fprint(tl, "é and three\n")
	if got := tl.String(); got != "é and three" {
		t.Errorf("got %q", got)
	}
	big := newTail(8)
	fmt.Fprint(big, strings.Repeat("x", 100)+"€end")
	if got := big.String(); !utf8.ValidString(got) || !strings.HasSuffix(got, "end") || len(got) > 8 {
		t.Errorf("got %q", got)
	}
}

func TestRedact(t *testing.T) {
	if got := redact("token=abc; again abc", []string{"abc", ""}); got != "token=[secret]; again [secret]" {
		t.Errorf("got %q", got)
	}
}

func TestRenderRedactsEachBlock(t *testing.T) {
	c := newCapped(1000)
	render(c, &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pw=hunter2"}},
		StructuredContent: map[string]any{"pw": "hunter2"}}, []string{"hunter2"})
	if got := c.String(); got != "pw=[secret]\n{\"pw\":\"[secret]\"}" {
		t.Errorf("got %q", got)
	}
}

// FuzzDecodeToolList checks that any bytes decode to a list that encodes
// to the same bytes, or fail, never panic.
func FuzzDecodeToolList(f *testing.F) {
	l := &ToolList{Server: "s", Target: "cmd", Protocol: "2025-11-25", Name: "n", Version: "1",
		Tools: []ListedTool{{Name: "t", As: "s_t", InputSchema: `{"type":"object"}`}}}
	b, err := l.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	empty, _ := (&ToolList{Tools: []ListedTool{}}).Encode()
	f.Add(empty)
	f.Add([]byte{0xd9, 0xd9, 0xf7, 0xa0})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := DecodeToolList(b)
		if err != nil {
			return
		}
		again, err := l.Encode()
		if err != nil || string(again) != string(b) {
			t.Fatalf("decoded %+v re-encodes to %x (%v); input %x", l, again, err, b)
		}
	})
}

// FuzzArguments checks that any arguments are accepted as a JSON object
// that fits the schema, or refused with invalid_arguments, never a panic.
func FuzzArguments(f *testing.F) {
	s := &Set{opts: (&Options{}).withDefaults()}
	c := &conn{cfg: Server{Name: "f"}, opts: s.opts}
	list := &ToolList{Server: "f", Tools: []ListedTool{{Name: "t", As: "f_t",
		InputSchema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"number"},"b":{"type":"array","items":{"type":"string"}}},"required":["a"]}`}}}
	tool, err := newTool(s, c, list, 0)
	if err != nil || tool.schema == nil {
		f.Fatalf("tool: %v, schema %v", err, tool.schema)
	}
	for _, seed := range []string{``, `{}`, `{"a": 1}`, `{"a": "x"}`, `{"a": 1, "b": ["x", 2]}`, `[1]`, `{"a": 1} {}`, `{"a": 1e400}`, "\xff"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		args, resp, ok := tool.arguments(tools.Request{Arguments: b})
		if ok {
			if args == nil || resp.ExitCode != 0 {
				t.Fatalf("accepted %q with %+v", b, resp)
			}
			return
		}
		if resp.ExitCode != exitUsage || resp.Error != ErrorInvalidArguments || !strings.HasPrefix(resp.Stderr, "f_t: ") {
			t.Fatalf("refused %q with %+v", b, resp)
		}
	})
}

func TestRedactLogger(t *testing.T) {
	var b strings.Builder
	l := redactLogger(slog.New(slog.NewTextHandler(&b, nil)), []string{"hunter2"})
	l.With("token", "hunter2").Warn("calling tools/call: 401 for hunter2", "body", "pw=hunter2", "n", 3)
	if got := b.String(); strings.Contains(got, "hunter2") || !strings.Contains(got, "[secret]") || !strings.Contains(got, "n=3") {
		t.Errorf("logged %q", got)
	}
}

// TestRenderStructured checks when a result's structuredContent is
// printed after its text: only when it says more than the text does.
func TestRenderStructured(t *testing.T) {
	listing := "[FILE] a.txt\n[DIR] sub"
	text := func(s ...string) []sdk.Content {
		var cs []sdk.Content
		for _, s := range s {
			cs = append(cs, &sdk.TextContent{Text: s})
		}
		return cs
	}
	for _, tc := range []struct {
		name       string
		content    []sdk.Content
		structured any
		want       string
	}{
		{"text only", text(listing), nil, listing},
		// The reference filesystem server's list_directory: the text, and
		// {"content": the text}. Printed once.
		{"object wrapping the text", text(listing), map[string]any{"content": listing}, listing},
		{"object wrapping the text, newline at the end", text(listing + "\n"), map[string]any{"content": listing}, listing + "\n"},
		{"object wrapping each text block", text("one", "two"), map[string]any{"a": "one", "b": "two"}, "one\ntwo"},
		{"the same JSON as text", text(`{"sum": 5}`), map[string]any{"sum": 5}, `{"sum": 5}`},
		{"structured only", nil, map[string]any{"sum": 5}, `{"sum":5}`},
		{"a string the text does not hold", text(listing), map[string]any{"content": listing, "path": "/tmp"}, listing + "\n" + `{"content":"[FILE] a.txt\n[DIR] sub","path":"/tmp"}`},
		{"a value not a string", text("5"), map[string]any{"sum": 5}, "5\n" + `{"sum":5}`},
		{"other text", text("done"), map[string]any{"content": listing}, "done\n" + `{"content":"[FILE] a.txt\n[DIR] sub"}`},
		{"empty object", text("done"), map[string]any{}, "done\n{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapped(1000)
			render(c, &sdk.CallToolResult{Content: tc.content, StructuredContent: tc.structured}, nil)
			if got := c.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBenignClose checks which errors of closing a server's session are
// not reported: those that say it had to be signalled or had gone.
func TestBenignClose(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{os.ErrProcessDone, true},
		{fmt.Errorf("close: %w", os.ErrProcessDone), true},
		{errors.New("os: process already finished"), true},
		{errors.New("closing stdin: write |1: file already closed"), true},
		{errors.New("signal: terminated"), true},
		{errors.New("unresponsive subprocess"), false},
	} {
		if got := benignClose(tc.err); got != tc.want {
			t.Errorf("benignClose(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
