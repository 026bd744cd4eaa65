package cli

import "testing"

func TestArgsText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{``, ``},
		{`{"path":"a.md"}`, `{"path":"a.md"}`},
		{`{"commands":"echo hi \u003e a.txt \u0026\u0026 cat \u003ca.txt"}`, `{"commands":"echo hi > a.txt && cat <a.txt"}`},
		{`{"s":"\u003E\u003C\u0026"}`, `{"s":"><&"}`},
		// An escaped backslash before u003e is text, not an escape.
		{`{"s":"\\u003e"}`, `{"s":"\\u003e"}`},
		{`{"s":"\\\u003e"}`, `{"s":"\\>"}`},
		// Other escapes stay.
		{`{"s":"\u00e9\n\"\u2028"}`, `{"s":"\u00e9\n\"\u2028"}`},
		// A preview cut inside an escape.
		{`{"s":"a \u00`, `{"s":"a \u00`},
		{`{"s":"a \`, `{"s":"a \`},
	} {
		if got := argsText(tc.in); got != tc.want {
			t.Errorf("argsText(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
