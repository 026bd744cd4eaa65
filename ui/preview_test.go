package ui

import (
	"html/template"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/agent/session"
)

// TestPreviewCounts: the preview of a tool's output and the fold of the
// whole result count lines in words that agree with the count: "1 more
// line", "(1 line)", never "1 lines".
func TestPreviewCounts(t *testing.T) {
	tmpl := template.Must(template.New("t").Funcs(funcs).ParseFS(assets, "assets/parts.html"))
	tests := []struct {
		name, out        string
		preview, summary string
	}{
		{"one line more", strings.Repeat("x\n", previewLines+1), "… 1 more line", "the whole result (9 lines)"},
		{"two lines more", strings.Repeat("x\n", previewLines+2), "… 2 more lines", "the whole result (10 lines)"},
		{"one long line", strings.Repeat("y", previewWidth+10), "…", "the whole result (1 line)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, more, n := preview(tc.out)
			if !strings.HasSuffix(text, tc.preview) || !more {
				t.Errorf("preview = %q, %v; want it to end %q, and more", text, more, tc.preview)
			}
			cv := callView{ToolCall: &session.ToolCall{CallID: "c", Tool: "t", Output: tc.out}, Preview: text, More: more, OutputLines: n}
			var b strings.Builder
			if err := tmpl.ExecuteTemplate(&b, "call", cv); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.summary) {
				t.Errorf("the call shows\n%s\nwant %q", b.String(), tc.summary)
			}
		})
	}
}
