package coreutils

import (
	"context"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

type cmdCase struct {
	args   []string
	stdin  string
	stdout string
	stderr string
	status int
}

func runCmd(t testing.TB, ctx context.Context, name string, args []string, stdin string, env *Env) (string, string, int) {
	t.Helper()
	fn, ok := Lookup(name)
	if !ok {
		t.Fatalf("no command %s", name)
	}
	var out, errOut strings.Builder
	e := Env{}
	if env != nil {
		e = *env
	}
	e.Stdin, e.Stdout, e.Stderr = strings.NewReader(stdin), &out, &errOut
	if e.MaxInputBytes == 0 {
		e.MaxInputBytes = 1 << 20
	}
	status := fn(ctx, &e, args)
	return out.String(), errOut.String(), status
}

func checkCases(t *testing.T, name string, cases []cmdCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(name+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, status := runCmd(t, t.Context(), name, tc.args, tc.stdin, nil)
			if out != tc.stdout || status != tc.status || (tc.stderr != "" && !strings.Contains(errOut, tc.stderr)) {
				t.Fatalf("%s %q <<< %q:\nstdout %q; want %q\nstderr %q; want %q\nstatus %d; want %d",
					name, tc.args, tc.stdin, out, tc.stdout, errOut, tc.stderr, status, tc.status)
			}
		})
	}
}

func TestPrintf(t *testing.T) {
	checkCases(t, "printf", []cmdCase{
		{args: []string{"%s-%s\\n", "a", "b", "c"}, stdout: "a-b\nc-\n"},
		{args: []string{"%d %i %u\\n", "42", "-3", "-1"}, stdout: "42 -3 18446744073709551615\n"},
		{args: []string{"%x %X %o %#x\\n", "255", "255", "8", "255"}, stdout: "ff FF 10 0xff\n"},
		{args: []string{"%.2f %8.3f %-8.1f|\\n", "3.14159", "2.5", "1"}, stdout: "3.14    2.500 1.0     |\n"},
		{args: []string{"%e %E %.2e\\n", "1234.5", "0.00012", "5"}, stdout: "1.234500e+03 1.200000E-04 5.00e+00\n"},
		{args: []string{"%g %g %g %.3g\\n", "0.0001", "100000", "1000000", "3.14159"}, stdout: "0.0001 100000 1e+06 3.14\n"},
		{args: []string{"%5s|%-5s|%.2s\\n", "ab", "ab", "abcdef"}, stdout: "   ab|ab   |ab\n"},
		{args: []string{"%03d|%+d|% d\\n", "7", "5", "5"}, stdout: "007|+5| 5\n"},
		{args: []string{"%*d|%-*d|\\n", "4", "1", "3", "2"}, stdout: "   1|2  |\n"},
		{args: []string{"%c%c\\n", "hello", "x"}, stdout: "hx\n"},
		{args: []string{"%d\\n", "'A"}, stdout: "65\n"},
		{args: []string{"%d\\n", "0x1f"}, stdout: "31\n"},
		{args: []string{"%b|\\n", "a\\tb\\n"}, stdout: "a\tb\n|\n"},
		{args: []string{"%b", "stop\\cignored"}, stdout: "stop"},
		{args: []string{"%q %q %q\\n", "a b", "", "x$'"}, stdout: "a\\ b '' x\\$\\'\n"},
		{args: []string{"%q\\n", "a\nb"}, stdout: "$'a\\nb'\n"},
		{args: []string{"100%%\\n"}, stdout: "100%\n"},
		{args: []string{"\\101\\x42\\u00e9\\n"}, stdout: "AB\u00e9\n"},
		{args: []string{"%d\\n", "abc"}, stdout: "0\n", stderr: "printf: abc: invalid number", status: 1},
		{args: []string{"%f\\n", "x"}, stdout: "0.000000\n", stderr: "invalid number", status: 1},
		{args: []string{"%k"}, stderr: "invalid format character", status: 1},
		{args: []string{"%"}, stderr: "missing format character", status: 1},
		{args: []string{"%999999999s", "x"}, stderr: "exceeds", status: 1},
		{args: []string{}, stderr: "usage", status: 2},
		{args: []string{"no newline"}, stdout: "no newline"},
	})
}

func TestJQ(t *testing.T) {
	checkCases(t, "jq", []cmdCase{
		{args: []string{"."}, stdin: `{"b":1,"a":[1,2]}`, stdout: "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    2\n  ]\n}\n"},
		{args: []string{"-S", "."}, stdin: `{"b":1,"a":[1,2]}`, stdout: "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": 1\n}\n"},
		{args: []string{"-c", "del(.a) + {x: 1}"}, stdin: `{"c":1,"a":2,"b":3}`, stdout: "{\"c\":1,\"b\":3,\"x\":1}\n"},
		{args: []string{"-c", "."}, stdin: `{"a": [1, 2]}`, stdout: "{\"a\":[1,2]}\n"},
		{args: []string{"-r", ".[]"}, stdin: `["x","y"]`, stdout: "x\ny\n"},
		{args: []string{"-j", ".[]"}, stdin: `["x","y"]`, stdout: "xy"},
		{args: []string{".a"}, stdin: "{\"a\":1}\n{\"a\":2}\n", stdout: "1\n2\n"},
		{args: []string{"-s", "add"}, stdin: "1 2 3", stdout: "6\n"},
		{args: []string{"-n", "[range(3)]", "-c"}, stdout: "[0,1,2]\n"},
		{args: []string{"-R", "."}, stdin: "a\nb\n", stdout: "\"a\"\n\"b\"\n"},
		{args: []string{"-Rs", "."}, stdin: "a\nb\n", stdout: "\"a\\nb\\n\"\n"},
		{args: []string{"--arg", "x", "1", "-n", "$x"}, stdout: "\"1\"\n"},
		{args: []string{"--argjson", "x", "{\"a\":2}", "-n", "$x.a"}, stdout: "2\n"},
		{args: []string{"-e", ".a"}, stdin: `{"a":false}`, stdout: "false\n", status: 1},
		{args: []string{"-e", "empty"}, stdin: `1`, status: 4},
		{args: []string{".a.b"}, stdin: `{"a":5}`, stderr: "jq: error", status: 5},
		{args: []string{".["}, stdin: `1`, stderr: "compile error", status: 3},
		{args: []string{"."}, stdin: `{bad`, stderr: "Cannot parse", status: 2},
		{args: []string{".", "/etc/passwd"}, stderr: "filesystem access disabled", status: 2},
		{args: []string{}, stdin: `{"a":1}`, stdout: "{\n  \"a\": 1\n}\n"},
		{args: []string{"-c", "[inputs]"}, stdin: "1 2 3", stdout: "[2,3]\n"},
		{args: []string{"-n", "input"}, stdin: "7 8", stdout: "7\n"},
		{args: []string{"12345678901234567890"}, stdin: "null", stdout: "12345678901234567890\n"},
		{args: []string{"--tab", "."}, stdin: `[1]`, stdout: "[\n\t1\n]\n"},
		{args: []string{"--indent", "0", "."}, stdin: `[1, 2]`, stdout: "[1,2]\n"},
		{args: []string{`"a" | halt_error(3)`, "-n"}, stderr: "a", status: 3},
		{args: []string{"-n", "env | keys"}, stdout: "[]\n"},
	})
	out, _, _ := runCmd(t, t.Context(), "jq", []string{"-n", "-r", "$ENV.ONLY"}, "", &Env{Environ: func() []string { return []string{"ONLY=sandbox"} }})
	if out != "sandbox\n" {
		t.Errorf("$ENV from the sandbox environment: %q", out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, status := runCmd(t, ctx, "jq", []string{"-n", "[range(1e9)] | length"}, "", nil)
	if status == 0 || time.Since(start) > 2*time.Second {
		t.Errorf("jq ignored the deadline: status %d after %v", status, time.Since(start))
	}
	cache := &JQCache{}
	for range 2 {
		if out, _, _ := runCmd(t, t.Context(), "jq", []string{".a"}, `{"a":1}`, &Env{JQ: cache}); out != "1\n" {
			t.Fatalf("cached filter: %q", out)
		}
	}
	if len(cache.codes) != 1 {
		t.Errorf("cache holds %d filters; want 1", len(cache.codes))
	}
}

func TestGrep(t *testing.T) {
	in := "apple\nBanana\ncherry\napricot\n"
	checkCases(t, "grep", []cmdCase{
		{args: []string{"ap"}, stdin: in, stdout: "apple\napricot\n"},
		{args: []string{"-i", "banana"}, stdin: in, stdout: "Banana\n"},
		{args: []string{"-v", "a"}, stdin: in, stdout: "cherry\n"},
		{args: []string{"-c", "a"}, stdin: in, stdout: "3\n"},
		{args: []string{"-n", "rr"}, stdin: in, stdout: "3:cherry\n"},
		{args: []string{"-o", "p[a-z]"}, stdin: "apple\nhop\n", stdout: "pp\n"},
		{args: []string{"-o", "[a-z]p"}, stdin: "apple\n", stdout: "ap\n"},
		{args: []string{"-o", "[0-9]+", "-E"}, stdin: "a1b22c333\n", stdout: "1\n22\n333\n"},
		{args: []string{"-q", "cherry"}, stdin: in},
		{args: []string{"-x", "apple"}, stdin: in, stdout: "apple\n"},
		{args: []string{"-w", "app"}, stdin: "app le\napple\n", stdout: "app le\n"},
		{args: []string{"-E", "^(a|c)[a-z]+e$"}, stdin: in, stdout: "apple\n"},
		{args: []string{`a\(p\)\1*`}, stdin: "x\n", stderr: "invalid regular expression", status: 2},
		{args: []string{`ch\(er\)ry`}, stdin: in, stdout: "cherry\n"},
		{args: []string{"a+"}, stdin: "a+\naa\n", stdout: "a+\n"},
		{args: []string{"-F", "a.p"}, stdin: "a.p\naxp\n", stdout: "a.p\n"},
		{args: []string{"-e", "apple", "-e", "cherry"}, stdin: in, stdout: "apple\ncherry\n"},
		{args: []string{"-m", "1", "a"}, stdin: in, stdout: "apple\n"},
		{args: []string{"zzz"}, stdin: in, status: 1},
		{args: []string{"a", "file"}, stderr: "file: filesystem access disabled", status: 2},
		{args: []string{"[[:digit:]]"}, stdin: "a1\nb\n", stdout: "a1\n"},
		{args: []string{"a", "-c"}, stdin: in, stdout: "3\n"},
	})
}

func TestSed(t *testing.T) {
	in := "one\ntwo\nthree\nfour\n"
	checkCases(t, "sed", []cmdCase{
		{args: []string{"s/o/0/"}, stdin: "foo\n", stdout: "f0o\n"},
		{args: []string{"s/o/0/g"}, stdin: "foo\n", stdout: "f00\n"},
		{args: []string{"s/o/0/2"}, stdin: "fooo\n", stdout: "fo0o\n"},
		{args: []string{"s/O/x/gI"}, stdin: "foo\n", stdout: "fxx\n"},
		{args: []string{"-E", `s/(o+)/[\1]/`}, stdin: "foo\n", stdout: "f[oo]\n"},
		{args: []string{`s/\(o\)/<\1>/`}, stdin: "foo\n", stdout: "f<o>o\n"},
		{args: []string{"s/f/&&/"}, stdin: "foo\n", stdout: "ffoo\n"},
		{args: []string{"s|/|_|g"}, stdin: "a/b/c\n", stdout: "a_b_c\n"},
		{args: []string{"-n", "2p"}, stdin: in, stdout: "two\n"},
		{args: []string{"-n", "2,3p"}, stdin: in, stdout: "two\nthree\n"},
		{args: []string{"2,3d"}, stdin: in, stdout: "one\nfour\n"},
		{args: []string{"$d"}, stdin: in, stdout: "one\ntwo\nthree\n"},
		{args: []string{"/t/d"}, stdin: in, stdout: "one\nfour\n"},
		{args: []string{"/t/!d"}, stdin: in, stdout: "two\nthree\n"},
		{args: []string{"-n", "/two/,/four/p"}, stdin: in, stdout: "two\nthree\nfour\n"},
		{args: []string{"-n", "/two/,+1p"}, stdin: in, stdout: "two\nthree\n"},
		{args: []string{"-n", "/t/,+1p"}, stdin: in + "tx\n", stdout: "two\nthree\ntx\n"},
		{args: []string{"2q"}, stdin: in, stdout: "one\ntwo\n"},
		{args: []string{"-n", "$="}, stdin: in, stdout: "4\n"},
		{args: []string{"y/abc/xyz/"}, stdin: "aabbcc\n", stdout: "xxyyzz\n"},
		{args: []string{"1i\\header"}, stdin: "x\n", stdout: "header\nx\n"},
		{args: []string{"1a after"}, stdin: "x\ny\n", stdout: "x\nafter\ny\n"},
		{args: []string{"2c changed"}, stdin: "x\ny\n", stdout: "x\nchanged\n"},
		{args: []string{"-e", "s/a/b/", "-e", "s/b/c/"}, stdin: "a\n", stdout: "c\n"},
		{args: []string{"s/a/b/; s/b/c/"}, stdin: "a\n", stdout: "c\n"},
		{args: []string{"s/x/y/"}, stdin: "no newline", stdout: "no newline"},
		{args: []string{"-n", "p"}, stdin: "a\nb", stdout: "a\nb\n"},
		{args: []string{"s/a/b"}, stdin: "a\n", stderr: "unterminated", status: 1},
		{args: []string{"k"}, stdin: "a\n", stderr: "unknown command", status: 1},
		{args: []string{"-i", "s/a/b/", "f"}, stderr: "filesystem access disabled", status: 2},
		{args: []string{"p", "file"}, stderr: "filesystem access disabled", status: 2},
	})
}

func TestText(t *testing.T) {
	lines := "3\n1\n2\n10\n"
	cases := map[string][]cmdCase{
		"head": {
			{args: []string{"-n", "2"}, stdin: lines, stdout: "3\n1\n"},
			{args: []string{"-2"}, stdin: lines, stdout: "3\n1\n"},
			{args: []string{"-n2"}, stdin: lines, stdout: "3\n1\n"},
			{args: []string{"-c", "3"}, stdin: lines, stdout: "3\n1"},
			{args: []string{"-n", "-1"}, stdin: lines, stdout: "3\n1\n2\n"},
			{args: []string{"-n", "x"}, stderr: "invalid number", status: 1},
		},
		"tail": {
			{args: []string{"-n", "2"}, stdin: lines, stdout: "2\n10\n"},
			{args: []string{"-n", "+3"}, stdin: lines, stdout: "2\n10\n"},
			{args: []string{"-1"}, stdin: "a\nb", stdout: "b"},
			{args: []string{"-c", "3"}, stdin: lines, stdout: "10\n"},
		},
		"sort": {
			{stdin: lines, stdout: "1\n10\n2\n3\n"},
			{args: []string{"-n"}, stdin: lines, stdout: "1\n2\n3\n10\n"},
			{args: []string{"-rn"}, stdin: lines, stdout: "10\n3\n2\n1\n"},
			{args: []string{"-u"}, stdin: "b\na\nb\n", stdout: "a\nb\n"},
			{args: []string{"-t", ",", "-k", "2n"}, stdin: "x,3\ny,1\nz,2\n", stdout: "y,1\nz,2\nx,3\n"},
			{args: []string{"-k", "2,2r"}, stdin: "a 1\nb 3\nc 2\n", stdout: "b 3\nc 2\na 1\n"},
			{args: []string{"-f"}, stdin: "b\nA\na\n", stdout: "A\na\nb\n"},
			{args: []string{"-V"}, stdin: "v1.10\nv1.9\nv1.2\n", stdout: "v1.2\nv1.9\nv1.10\n"},
			{args: []string{"-k", "0"}, stderr: "invalid key", status: 2},
		},
		"uniq": {
			{stdin: "a\na\nb\na\n", stdout: "a\nb\na\n"},
			{args: []string{"-c"}, stdin: "a\na\nb\n", stdout: "      2 a\n      1 b\n"},
			{args: []string{"-d"}, stdin: "a\na\nb\n", stdout: "a\n"},
			{args: []string{"-u"}, stdin: "a\na\nb\n", stdout: "b\n"},
			{args: []string{"-i"}, stdin: "a\nA\n", stdout: "a\n"},
		},
		"wc": {
			{stdin: "a b\nc\n", stdout: "      2       3       6\n"},
			{args: []string{"-l"}, stdin: "a b\nc\n", stdout: "2\n"},
			{args: []string{"-w"}, stdin: "a b\nc", stdout: "3\n"},
			{args: []string{"-c"}, stdin: "é", stdout: "2\n"},
			{args: []string{"-m"}, stdin: "é", stdout: "1\n"},
		},
		"cut": {
			{args: []string{"-d:", "-f1,3"}, stdin: "a:b:c\n", stdout: "a:c\n"},
			{args: []string{"-d", ":", "-f", "2-"}, stdin: "a:b:c\n", stdout: "b:c\n"},
			{args: []string{"-f2"}, stdin: "a\tb\nnodelim\n", stdout: "b\nnodelim\n"},
			{args: []string{"-s", "-f2"}, stdin: "a\tb\nnodelim\n", stdout: "b\n"},
			{args: []string{"-c", "2-3"}, stdin: "héllo\n", stdout: "él\n"},
			{args: []string{"-b", "1"}, stdin: "abc\n", stdout: "a\n"},
			{args: []string{"-f", "x"}, stderr: "invalid field", status: 1},
			{stderr: "you must specify", status: 1},
		},
		"tr": {
			{args: []string{"a-z", "A-Z"}, stdin: "hello\n", stdout: "HELLO\n"},
			{args: []string{"[:lower:]", "[:upper:]"}, stdin: "hi\n", stdout: "HI\n"},
			{args: []string{"-d", "0-9"}, stdin: "a1b2\n", stdout: "ab\n"},
			{args: []string{"-s", " "}, stdin: "a   b\n", stdout: "a b\n"},
			{args: []string{"-c", "a-z\\n", "_"}, stdin: "a-b c\n", stdout: "a_b_c\n"},
			{args: []string{"-cd", "a-z"}, stdin: "a1-b\n", stdout: "ab"},
			{args: []string{"abc", "x"}, stdin: "abcd\n", stdout: "xxxd\n"},
			{args: []string{"\\n", " "}, stdin: "a\nb\n", stdout: "a b "},
			{args: []string{"z-a", "x"}, stderr: "reverse", status: 1},
		},
		"seq": {
			{args: []string{"3"}, stdout: "1\n2\n3\n"},
			{args: []string{"2", "4"}, stdout: "2\n3\n4\n"},
			{args: []string{"1", "2", "7"}, stdout: "1\n3\n5\n7\n"},
			{args: []string{"3", "-1", "1"}, stdout: "3\n2\n1\n"},
			{args: []string{"0", "0.5", "1"}, stdout: "0.0\n0.5\n1.0\n"},
			{args: []string{"-s", ",", "3"}, stdout: "1,2,3\n"},
			{args: []string{"-w", "9", "10"}, stdout: "09\n10\n"},
			{args: []string{"5", "1"}},
			{args: []string{"x"}, stderr: "invalid floating point", status: 1},
			{args: []string{"1", "0", "2"}, stderr: "Zero increment", status: 1},
			{args: []string{"-f", "%03g", "2"}, stdout: "001\n002\n"},
			{args: []string{"-f", "x%dy", "2"}, stderr: "floating point", status: 1},
			{args: []string{"-f", "%g", "-w", "2"}, stderr: "equal width", status: 1},
		},
		"column": {
			{args: []string{"-t"}, stdin: "a bb c\nddd e\n\nf\n", stdout: "a    bb  c\nddd  e   \nf        \n"},
			{args: []string{"-t", "-s", ",", "-o", "|"}, stdin: "a,b\n111,2\n", stdout: "a  |b\n111|2\n"},
			{args: []string{"-t", "-R", "2"}, stdin: "k v\nlong 10\n", stdout: "k      v\nlong  10\n"},
			{stdin: "a b\n", stderr: "only the table mode", status: 1},
		},
		"expand": {
			{stdin: "a\tb\n", stdout: "a       b\n"},
			{args: []string{"-t", "4"}, stdin: "\tx\ty", stdout: "    x   y"},
			{args: []string{"-i", "-t", "2"}, stdin: "\ta\tb\n", stdout: "  a\tb\n"},
		},
		"cat": {
			{stdin: "a\nb", stdout: "a\nb"},
			{args: []string{"-"}, stdin: "x", stdout: "x"},
			{args: []string{"-n"}, stdin: "a\nb\n", stdout: "     1\ta\n     2\tb\n"},
			{args: []string{"/etc/passwd"}, stderr: "/etc/passwd: filesystem access disabled", status: 2},
		},
		"tee": {
			{stdin: "x\n", stdout: "x\n"},
			{args: []string{"/dev/null"}, stdin: "x\n", stdout: "x\n"},
			{args: []string{"out.txt"}, stdin: "x\n", stdout: "x\n", stderr: "out.txt: filesystem access disabled", status: 1},
		},
		"basename": {
			{args: []string{"/a/b/c.txt"}, stdout: "c.txt\n"},
			{args: []string{"/a/b/c.txt", ".txt"}, stdout: "c\n"},
			{args: []string{"-a", "/x/y", "z/"}, stdout: "y\nz\n"},
			{args: []string{"-s", ".go", "a.go", "b.go"}, stdout: "a\nb\n"},
			{args: []string{"/"}, stdout: "/\n"},
			{stderr: "missing operand", status: 1},
		},
		"dirname": {
			{args: []string{"/a/b/c"}, stdout: "/a/b\n"},
			{args: []string{"c"}, stdout: ".\n"},
			{args: []string{"/a"}, stdout: "/\n"},
			{args: []string{"a/b/", "/"}, stdout: "a\n/\n"},
		},
		"base64": {
			{stdin: "hello", stdout: "aGVsbG8=\n"},
			{args: []string{"-d"}, stdin: "aGVsbG8=\n", stdout: "hello"},
			{args: []string{"-w", "4"}, stdin: "hello", stdout: "aGVs\nbG8=\n"},
			{args: []string{"-d"}, stdin: "!!", stderr: "invalid input", status: 1},
		},
	}
	for name, cs := range cases {
		checkCases(t, name, cs)
	}
}

func TestDate(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 1, 2, 15, 4, 5, 123456789, time.FixedZone("X", 3600)) }
	env := &Env{Now: now}
	tests := []struct {
		args []string
		want string
	}{
		{nil, "Fri Jan  2 14:04:05 UTC 2026\n"},
		{[]string{"+%Y-%m-%d %H:%M:%S %Z %z %s %N %j %a %A %b %B %p %e %I"}, "2026-01-02 14:04:05 UTC +0000 1767362645 123456789 002 Fri Friday Jan January PM  2 02\n"},
		{[]string{"-u", "+%F %T %D %R"}, "2026-01-02 14:04:05 01/02/26 14:04\n"},
		{[]string{"-I"}, "2026-01-02\n"},
		{[]string{"-Iseconds"}, "2026-01-02T14:04:05+00:00\n"},
		{[]string{"-R"}, "Fri, 02 Jan 2026 14:04:05 +0000\n"},
		{[]string{"-d", "@0", "+%F %T"}, "1970-01-01 00:00:00\n"},
		{[]string{"-d", "2024-02-29 10:00", "+%F %H"}, "2024-02-29 10\n"},
		{[]string{"--date=2024-02-29T10:00:00Z", "+%s"}, "1709200800\n"},
		{[]string{"+%-d/%_m/%%"}, "2/ 1/%\n"},
	}
	for _, tc := range tests {
		out, errOut, status := runCmd(t, t.Context(), "date", tc.args, "", env)
		if out != tc.want || status != 0 {
			t.Errorf("date %q = %q (%q, %d); want %q", tc.args, out, errOut, status, tc.want)
		}
	}
	if _, errOut, status := runCmd(t, t.Context(), "date", []string{"-d", "someday"}, "", env); status != 1 || !strings.Contains(errOut, "invalid date") {
		t.Errorf("bad date: %q %d", errOut, status)
	}
}

func TestXargs(t *testing.T) {
	var calls [][]string
	env := &Env{Exec: func(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
		calls = append(calls, argv)
		if argv[0] == "fail" {
			return 1
		}
		if argv[0] == "missing" {
			return 127
		}
		io.WriteString(stdout, strings.Join(argv, " ")+"\n")
		return 0
	}}
	tests := []struct {
		args   []string
		stdin  string
		stdout string
		status int
	}{
		{nil, "a b\nc\n", "echo a b c\n", 0},
		{[]string{"-n", "2", "cmd"}, "1 2 3", "cmd 1 2\ncmd 3\n", 0},
		{[]string{"-I", "{}", "get", "--id", "{}"}, "1\n2\n", "get --id 1\nget --id 2\n", 0},
		{[]string{"-0", "x"}, "a b\x00c\x00", "x a b c\n", 0},
		{[]string{"-d", ",", "x"}, "a,b", "x a b\n", 0},
		{[]string{"x"}, `"a b" 'c d' e\ f`, "x a b c d e f\n", 0},
		{[]string{"-r", "x"}, "", "", 0},
		{[]string{"x"}, "", "x\n", 0},
		{[]string{"fail"}, "a", "", 123},
		{[]string{"missing"}, "a", "", 127},
	}
	for _, tc := range tests {
		out, errOut, status := runCmd(t, t.Context(), "xargs", tc.args, tc.stdin, env)
		if out != tc.stdout || status != tc.status {
			t.Errorf("xargs %q <<< %q = %q %d (%q); want %q %d", tc.args, tc.stdin, out, status, errOut, tc.stdout, tc.status)
		}
	}
	if _, errOut, status := runCmd(t, t.Context(), "xargs", nil, "a", nil); status != 126 || !strings.Contains(errOut, "disabled") {
		t.Errorf("xargs without Exec: %q %d", errOut, status)
	}
}

func TestInputLimit(t *testing.T) {
	env := &Env{MaxInputBytes: 10}
	for _, name := range []string{"sort", "cat", "wc", "jq", "grep", "sed", "tr", "base64"} {
		args := map[string][]string{"jq": {"."}, "grep": {"x"}, "sed": {"p"}, "tr": {"a", "b"}}[name]
		_, errOut, status := runCmd(t, t.Context(), name, args, strings.Repeat("1\n", 20), env)
		if status == 0 || !strings.Contains(errOut, "input exceeds 10 bytes") {
			t.Errorf("%s over the input limit: status %d, stderr %q", name, status, errOut)
		}
	}
	if out, _, status := runCmd(t, t.Context(), "cat", nil, "0123456789", env); status != 0 || out != "0123456789" {
		t.Errorf("input of exactly the limit: %q %d", out, status)
	}
}

func TestNames(t *testing.T) {
	names := Names()
	if len(names) != len(commands) || names[0] != "awk" {
		t.Errorf("Names() = %v", names)
	}
	if _, ok := Lookup("curl"); ok {
		t.Error("Lookup(curl) found a command")
	}
}

// TestSedLoops: a branch that loops on one line ends with the script's
// context, and a loop that grows the pattern space ends at its bound;
// sed -i leaves the file as it was either way.
func TestSedLoops(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, errOut, status := runCmd(t, ctx, "sed", []string{":a;ba"}, "x\n", nil); status != 1 || !strings.Contains(errOut, "interrupted") {
		t.Errorf("sed ':a;ba': status %d, %q; want 1, interrupted", status, errOut)
	}
	if _, errOut, status := runCmd(t, t.Context(), "sed", []string{`:a;H;G;ba`}, "x\n", nil); status != 1 || !strings.Contains(errOut, "grew past 64 MiB") {
		t.Errorf("sed doubling its pattern space: status %d, %q; want 1, grew past 64 MiB", status, errOut)
	}
	fsys := vfs.New(vfs.Options{})
	if err := fsys.WriteFile(t.Context(), "/tmp/f", []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel2()
	if _, _, status := runCmd(t, ctx2, "sed", []string{"-i", ":a;ba", "/tmp/f"}, "", &Env{FS: fsys}); status != 1 {
		t.Errorf("sed -i ':a;ba': status %d; want 1", status)
	}
	if b, err := fsys.ReadFile(t.Context(), "/tmp/f"); err != nil || string(b) != "kept\n" {
		t.Errorf("sed -i interrupted changed the file: %q, %v", b, err)
	}
}

// TestJQHeapBound: a filter that builds a collection too large is ended
// at the heap bound with a message saying so, not by the time limit.
func TestJQHeapBound(t *testing.T) {
	defer func(b uint64) { jqHeapBound = b }(jqHeapBound)
	jqHeapBound = 32 << 20
	_, errOut, status := runCmd(t, t.Context(), "jq", []string{"-n", "[range(1e9)] | length"}, "", nil)
	if status != 5 || !strings.Contains(errOut, "grew the heap past 32 MiB") {
		t.Errorf("status %d, stderr %q; want 5 and the heap bound", status, errOut)
	}
	if out, _, status := runCmd(t, t.Context(), "jq", []string{"-n", "[range(1000)] | length"}, "", nil); status != 0 || out != "1000\n" {
		t.Errorf("a small collection: %q, status %d", out, status)
	}
}

// TestVersionProbe: "<utility> --version" answers for every utility but
// printf (bash's builtin has no --version), naming it GNU-compatible.
func TestVersionProbe(t *testing.T) {
	for _, name := range Names() {
		out, _, status := runCmd(t, t.Context(), name, []string{"--version"}, "", nil)
		if name == "printf" {
			continue
		}
		if status != 0 || !strings.HasPrefix(out, name+" (GNU-compatible") {
			t.Errorf("%s --version: %q, status %d", name, out, status)
		}
	}
}

// TestHelpProbe: "<utility> --help" prints a usage for every utility, from
// one table that names every utility and nothing else.
func TestHelpProbe(t *testing.T) {
	names := Names()
	for _, name := range names {
		out, errOut, status := runCmd(t, t.Context(), name, []string{"--help"}, "", nil)
		if status != 0 || !strings.HasPrefix(out, "Usage: "+name+" ") || errOut != "" || strings.Count(out, "\n") != 3 {
			t.Errorf("%s --help: %q %q, status %d", name, out, errOut, status)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(usages, "\n"), "\n") {
		name, rest, _ := strings.Cut(line, "\t")
		if !slices.Contains(names, name) || strings.Count(rest, "\t") != 1 {
			t.Errorf("usages: %q is not a utility's line", line)
		}
	}
	if _, ok := Usage("nope"); ok {
		t.Error("a usage for nope")
	}
}
