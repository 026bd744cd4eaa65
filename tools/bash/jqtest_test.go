package bash

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// jqTestCase is one case of jq's tests/jq.test: a program, an input and
// the expected outputs, or (fail) a program that must not compile.
type jqTestCase struct {
	line         int
	program      string
	input        string
	want         []string
	fail         bool
	runtimeError bool // the case expects jq to fail at run time
}

// parseJQTest reads jq.test's format: groups of lines (program, input,
// outputs) separated by blank lines, comments starting with #, and
// "%%FAIL" groups (program, error message).
func parseJQTest(data string) []jqTestCase {
	var out []jqTestCase
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := jqTestCase{line: i + 1}
		if strings.HasPrefix(l, "%%FAIL") {
			c.fail = true
			i++
			if i >= len(lines) {
				break
			}
			c.program = lines[i]
		} else {
			c.program = l
			i++
			if i < len(lines) {
				c.input = lines[i]
			}
		}
		for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
			i++
			switch {
			case strings.HasPrefix(lines[i], "# Runtime error"):
				c.runtimeError = true
			case !strings.HasPrefix(lines[i], "#") || c.fail:
				c.want = append(c.want, lines[i])
			}
		}
		out = append(out, c)
	}
	return out
}

// jqTestUnsupported are the cases of jq.test that gojq does not support
// or answers differently, by the program's first line (its line in the
// file when the same program appears twice), with the reason.
var jqTestUnsupported = map[string]string{
	"@text,@json,([1,.] | (@csv, @tsv)),@html,@uri,@sh,@base64,(@base64 | @base64d)": "gojq's @uri escapes ' (%27), which jq leaves as it is",
	"try (.foo[-1] = 0) catch .": "gojq words this error differently",
	"try (.foo[-2] = 0) catch .": "gojq words this error differently",
	"[first(range(.)), last(range(.)), nth(0; range(.)), nth(5; range(.)), try nth(-1; range(.)) catch .]": "gojq words this error differently",
	"[.[] | try utf8bytelength catch .]":                 "gojq words this error differently",
	"try path(.a | map(select(.b == 0))) catch .":        "gojq words this error differently",
	"try path(.a | map(select(.b == 0)) | .[0]) catch .": "gojq words this error differently",
	"try path(.a | map(select(.b == 0)) | .c) catch .":   "gojq words this error differently",
	"try path(.a | map(select(.b == 0)) | .[]) catch .":  "gojq words this error differently",
	"try delpaths(0) catch .":                            "gojq words this error differently",
	".[] | try (getpath([\"a\",0,\"b\"]) |= 5) catch .":  "gojq words this error differently",
	"try ((map(select(.a == 1))[].b) = 10) catch .":      "gojq words this error differently",
	"try ((map(select(.a == 1))[].a) |= .+1) catch .":    "gojq words this error differently",
	"try (def x: reverse; x=10) catch .":                 "gojq words this error differently",
	".[] = 1":                                            "the input holds NaN and Infinity, which gojq (like JSON) does not read",
	"[.[]|try if . == 0 then error(\"foo\") elif . == 1 then .a elif . == 2 then empty else . end catch .]": "gojq words this error differently",
	"try error(\"\\($__loc__)\") catch .": "gojq has no $__loc__",
	"try flatten(-1) catch .":             "gojq words this error differently",
	"import \"a\" as foo; import \"b\" as bar; def fooa: foo::a; [fooa, bar::a, bar::b, foo::a]":                "modules: the sandbox's jq has no module files",
	"import \"c\" as foo; [foo::a, foo::c]":                                                                     "modules: the sandbox's jq has no module files",
	"include \"c\"; [a, c]":                                                                                     "modules: the sandbox's jq has no module files",
	"import \"data\" as $e; import \"data\" as $d; [$d[].this,$e[].that,$d::d[].this,$e::e[].that]|join(\";\")": "modules: the sandbox's jq has no module files",
	"include \"shadow1\"; e":                                                                                    "modules: the sandbox's jq has no module files",
	"include \"shadow1\"; include \"shadow2\"; e":                                                               "modules: the sandbox's jq has no module files",
	"import \"shadow1\" as f; import \"shadow2\" as f; import \"shadow1\" as e; [e::e, f::e]":                   "modules: the sandbox's jq has no module files",
	"modulemeta":                   "modules: the sandbox's jq has no module files",
	"modulemeta | .deps |= length": "modules: the sandbox's jq has no module files",
	"import \"test_bind_order\" as check; check::check": "modules: the sandbox's jq has no module files",
	"try -. catch .":          "gojq words this error differently",
	"try join(\",\") catch .": "gojq words this error differently",
	"try (1/.) catch .":       "gojq words this error differently",
	"try (1%.) catch .":       "gojq words this error differently",
}

// TestJQTestSuite runs jq's own tests/jq.test (from the jqlang/jq
// repository; DEMIURGE_JQ_TEST names the file) through the sandbox's jq:
// every case passes except those gojq does not support, listed with the
// reason in jqTestUnsupported.
func TestJQTestSuite(t *testing.T) {
	path := os.Getenv("DEMIURGE_JQ_TEST")
	if path == "" {
		t.Skip("set DEMIURGE_JQ_TEST to jq's tests/jq.test (github.com/jqlang/jq) to run jq's own tests")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases := parseJQTest(string(data))
	if len(cases) < 100 {
		t.Fatalf("%s holds %d cases; is it jq.test?", path, len(cases))
	}
	st := NewBuilder("jqtest").MustBuild()
	passed, skipped := 0, 0
	for _, c := range cases {
		ctx := context.Background()
		fsys := vfs.New(vfs.Options{})
		fsys.WriteFile(ctx, "/workspace/prog.jq", []byte(c.program), 0)
		fsys.WriteFile(ctx, "/workspace/input.json", []byte(strings.TrimPrefix(c.input, "\ufeff")), 0)
		script := "jq -c -f prog.jq input.json"
		if c.fail {
			script = "jq -n -f prog.jq"
		}
		res := st.RunScript(ctx, tools.Request{Commands: script}, RunOptions{FS: fsys})
		ok := false
		if c.fail || c.runtimeError {
			ok = res.ExitCode != 0
		} else {
			ok = res.ExitCode == 0 && sameJSONLines(res.Stdout, c.want)
		}
		reason, unsupported := jqTestUnsupported[c.program]
		switch {
		case ok && unsupported:
			t.Logf("line %d %s passes (listed as unsupported: %s): remove it from jqTestUnsupported", c.line, c.program, reason)
			passed++
		case ok:
			passed++
		case unsupported:
			skipped++
		default:
			t.Errorf("jq.test line %d: %s\ninput %s\nwant %q\ngot  %q (exit %d, stderr %q)", c.line, c.program, c.input, c.want, res.Stdout, res.ExitCode, res.Stderr)
		}
	}
	t.Logf("jq.test: %d cases, %d pass, %d unsupported by gojq", len(cases), passed, skipped)
}

// sameJSONLines compares jq's outputs as JSON values (2.0 equals 2).
func sameJSONLines(got string, want []string) bool {
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSuffix(got, "\n"), "\n") {
		if l != "" || got != "" {
			lines = append(lines, l)
		}
	}
	if got == "" {
		lines = nil
	}
	if len(lines) != len(want) {
		return false
	}
	for i := range lines {
		var a, b any
		if json.Unmarshal([]byte(lines[i]), &a) != nil || json.Unmarshal(bytes.TrimSpace([]byte(want[i])), &b) != nil {
			return false
		}
		if !reflect.DeepEqual(a, b) {
			return false
		}
	}
	return true
}
