package introspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/schema"
)

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		limit   int
		want    string
		wantCut bool
	}{
		{"short", "abc", 10, "abc", false},
		{"exact", "abcde", 5, "abcde", false},
		{"ascii", "abcdefgh", 5, "abcde\n[output truncated: 8 bytes in all, the first 5 shown]", true},
		// é is two bytes: a cut in its middle moves back before it.
		{"two-byte rune", "abcdé", 5, "abcd\n[output truncated: 6 bytes in all, the first 4 shown]", true},
		{"four-byte rune", "a😀b", 3, "a\n[output truncated: 6 bytes in all, the first 1 shown]", true},
		{"rune ends at limit", "ab😀c", 6, "ab😀\n[output truncated: 7 bytes in all, the first 6 shown]", true},
		{"zero limit", "xyz", 0, "\n[output truncated: 3 bytes in all, the first 0 shown]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := bound(tc.in, tc.limit)
			if got != tc.want || cut != tc.wantCut {
				t.Errorf("bound(%q, %d) = %q, %v; want %q, %v", tc.in, tc.limit, got, cut, tc.want, tc.wantCut)
			}
			if !utf8.ValidString(got) {
				t.Errorf("bound(%q, %d) = %q is not valid UTF-8", tc.in, tc.limit, got)
			}
		})
	}
}

// TestSpecs checks every tool's own texts and schemas: the schemas
// compile, the input schema is closed, the examples the help shows are
// valid arguments, the help has the man page's sections.
func TestSpecs(t *testing.T) {
	r := newReader(nil, nil)
	for _, s := range []spec{manifestSpec(r), schemasSpec(r), moduleSpec(r), stateSpec(r), headSpec(r)} {
		t.Run(s.name, func(t *testing.T) {
			tl := newTool(s, r)
			mustCompile(s.name+"-output", s.output)
			var in struct {
				Type                 string                     `json:"type"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
				Properties           map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal([]byte(s.input), &in); err != nil {
				t.Fatal(err)
			}
			if in.Type != "object" || in.AdditionalProperties == nil || *in.AdditionalProperties {
				t.Errorf("input schema is not a closed object: type %q, additionalProperties %v", in.Type, in.AdditionalProperties)
			}
			for name, p := range in.Properties {
				var prop struct {
					Description string `json:"description"`
				}
				_ = json.Unmarshal(p, &prop)
				if prop.Description == "" {
					t.Errorf("property %s has no description", name)
				}
			}
			if len(s.examples) == 0 {
				t.Fatal("no examples")
			}
			for _, ex := range s.examples {
				if _, msg := tl.validate(json.RawMessage(ex)); msg != "" {
					t.Errorf("example %s is not valid: %s", ex, msg)
				}
			}
			info := tl.Info()
			help := info.Help
			sections := []string{"NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "OUTPUT", "EXIT STATUS"}
			if _, ok := in.Properties["consistency"]; ok {
				sections = append(sections, "CONSISTENCY")
			}
			for _, sec := range sections {
				if !strings.Contains(help, "\n"+sec+"\n") {
					t.Errorf("help has no %s section:\n%s", sec, help)
				}
			}
			for _, line := range strings.Split(help, "\n") {
				if len(line) > 80 {
					t.Errorf("help line longer than 80 columns: %q", line)
				}
			}
			if !strings.HasPrefix(info.SystemPrompt, s.name+":") {
				t.Errorf("system prompt %q does not start with the name", info.SystemPrompt)
			}
			if len(info.ShortDescription) > 120 || strings.Contains(info.ShortDescription, "\n") {
				t.Errorf("short description is not one short line: %q", info.ShortDescription)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: unknown reducer %q", ErrNotFound, "x"), `unknown reducer "x"`},
		{fmt.Errorf("%w: exact:9 is above", ErrUnavailable), "exact:9 is above"},
		{fmt.Errorf("%w: key", ErrInvalid), "key"},
		{fmt.Errorf("%w \"x\": want", ErrBadConsistency), `bad consistency "x": want`},
		{errors.New("journal: corrupt"), "journal: corrupt"},
	} {
		if got := message(tc.err); got != tc.want {
			t.Errorf("message(%v) = %q; want %q", tc.err, got, tc.want)
		}
	}
}

func TestListNames(t *testing.T) {
	if got := listNames(nil, "x"); got != "(none)" {
		t.Errorf("listNames(nil) = %q", got)
	}
	if got := listNames([]string{"a/A@1", "b/B@1"}, "x"); got != "a/A@1, b/B@1" {
		t.Errorf("listNames = %q", got)
	}
	var many []string
	for i := range 50 {
		many = append(many, fmt.Sprintf("ns/Name%02d@1", i))
	}
	got := listNames(many, "ns/Name42@1")
	if !strings.HasPrefix(got, "ns/Name42@1, ") || !strings.HasSuffix(got, "(50 in all; the closest shown)") {
		t.Errorf("listNames(50 names) = %q; want the closest first and a count", got)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		line  string
		width int
		want  []string
	}{
		{"short", 10, []string{"short"}},
		{"one two three four", 9, []string{"one two", "three", "four"}},
		{"  indented words here", 12, []string{"  indented", "  words here"}},
		{"- a list item that wraps", 12, []string{"- a list", "  item that", "  wraps"}},
		{"- averyveryverylongword", 8, []string{"- averyveryverylongword"}},
		{"- a averyveryverylongword", 8, []string{"- a", "  averyveryverylongword"}},
		{"nospaces_at_all_in_this_line", 5, []string{"nospaces_at_all_in_this_line"}},
	} {
		got := wrap(tc.line, tc.width)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrap(%q, %d) = %q; want %q", tc.line, tc.width, got, tc.want)
		}
	}
}

func TestRenderFallsBackToUntypedJSON(t *testing.T) {
	cat, err := schema.Load("../../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := schema.Record("pc", schema.Variant("Done", nil), "remaining", uint64(0))
	if got := string(render(cat, "counter/State@1", ok)); got != `{"pc":{"$tag":"Done"},"remaining":0}` {
		t.Errorf("render = %s", got)
	}
	// A state of an older shape: shown as it is, without its types.
	old := schema.Record("count", uint64(3), "blob", []byte{1})
	if got := string(render(cat, "counter/State@1", old)); got != `{"blob":{"$bytes":"AQ=="},"count":3}` {
		t.Errorf("render of a value that does not fit = %s", got)
	}
}
