package awk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

type awkCase struct {
	name, prog, input, want string
	args                    []string
	status                  int
}

// awkCases were checked against gawk 5.2 (LC_ALL=C.UTF-8).
var awkCases = []awkCase{
	{name: "gensub-global", prog: `{print gensub(/([a-z]+)=([0-9])/, "\\2:\\1", "g")}`, input: "foo=1 bar=2\n", want: "1:foo 2:bar\n"},
	{name: "gensub-nth", prog: `{print gensub(/-/, "+", 2); print gensub(/-/, "+", 9); print}`, input: "a-b-c\n", want: "a-b+c\na-b-c\na-b-c\n"},
	{name: "gensub-amp", prog: `{print gensub(/o/, "[&|\\&|\\0]", "g", "foo")}`, input: "\n", want: "f[o|&|o][o|&|o]\n"},
	{name: "match-array", prog: `{if (match($0, /([a-z]+)([0-9]+)/, m)) print m[0], m[1], m[2], m[1, "start"], m[2, "length"], RSTART, RLENGTH}`, input: "abc123def\n", want: "abc123 abc 123 1 3 1 6\n"},
	{name: "match-array-none", prog: `{m[9] = 1; print match($0, /z(q)?/, m), length(m)}`, input: "abc\n", want: "0 0\n"},
	{name: "printf-c-field", prog: `{printf "%c%c|%c\n", $1, $2, $3}`, input: "65 66 hello\n", want: "AB|h\n"},
	{name: "field", prog: `{print $2}`, input: "a b c\n", want: "b\n"},
	{name: "sum", prog: `{s+=$1*$2} END {print s}`, input: "1 2\n3 4\n", want: "14\n"},
	{name: "FS var", prog: `BEGIN{FS=":"} {print $2, $1}`, input: "x:1\n", want: "1 x\n"},
	{name: "OFS rebuild", prog: `BEGIN{FS=",";OFS="-"} {$1=$1; print}`, input: "a,b,c\n", want: "a-b-c\n"},
	{name: "pattern", prog: `NR%3==0`, input: "1\n2\n3\n4\n5\n6\n", want: "3\n6\n"},
	{name: "range", prog: `NR==2,NR==3 {print "r", $0}`, input: "1\n2\n3\n4\n", want: "r 2\nr 3\n"},
	{name: "regex range", prog: `/start/,/end/ {print NR}`, input: "start\nx\nend\ny\nstart\nz\n", want: "1\n2\n3\n5\n6\n"},
	{name: "assoc insertion order", prog: `{c[$1]+=$2} END {for (k in c) print k, c[k]}`, input: "b 2\na 1\nb 3\n", want: "b 5\na 1\n"},
	{name: "printf", prog: `BEGIN { printf "%5.2f|%-5s|%03d|%x|%c|%e\n", 3.14159, "ab", 7, 255, 65, 12345.678 }`, want: " 3.14|ab   |007|ff|A|1.234568e+04\n"},
	{name: "printf star", prog: `BEGIN { printf "%*d|%-*s|%.*f\n", 5, 42, 4, "ab", 2, 3.14159 }`, want: "   42|ab  |3.14\n"},
	{name: "string functions", prog: `BEGIN { s = "hello world"; print length(s), substr(s, 1, 5), index(s, "world"), toupper(s) }`, want: "11 hello 7 HELLO WORLD\n"},
	{name: "substr edges", prog: `BEGIN { print substr("hello", 2) "|" substr("hello", 0, 2) "|" substr("hello", -1, 3) "|" substr("hello", 1.7, 2) "|" substr("abc", 2, 0) "|" substr("abc", 4) "|" }`, want: "ello|he|hel|he|||\n"},
	{name: "split", prog: `BEGIN { n = split("a:b:c", arr, ":"); print n, arr[1], arr[3]; n = split("a1b22c", p, /[0-9]+/); print n, p[3] }`, want: "3 a c\n3 c\n"},
	{name: "gsub", prog: `BEGIN { s = "foo bar foo"; n = gsub(/foo/, "[&]", s); print n, s; sub(/bar/, "X", s); print s }`, want: "2 [foo] bar [foo]\n[foo] X [foo]\n"},
	{name: "gsub escapes", prog: `BEGIN { s = "x&y"; gsub(/&/, "\\&amp;", s); t = "aa"; gsub(/a/, "\\\\", t); print s, t }`, want: "x&amp;y \\\\\\\\\n"},
	{name: "gsub empty matches", prog: `BEGIN { s = "abc"; gsub(/b*/, "-", s); print s }`, want: "-a-c-\n"},
	{name: "match", prog: `BEGIN { if (match("xxabcxx", /ab+c/)) print RSTART, RLENGTH; print match("x", /z/), RSTART, RLENGTH }`, want: "3 3\n0 0 -1\n"},
	{name: "recursion", prog: `function f(n) { return n <= 1 ? 1 : n * f(n-1) } BEGIN { print f(10) }`, want: "3628800\n"},
	{name: "NF and $NF", prog: `{print NF, $NF, $(NF-1)}`, input: "a b\nc d e\n", want: "2 b a\n3 e d\n"},
	{name: "arithmetic", prog: `BEGIN { x = 1; x += 2; x *= 3; x ^= 2; print x, x % 7, -x, x / 4, 2 ** 3, -3 % 2 }`, want: "81 4 -81 20.25 8 -1\n"},
	{name: "comparisons", prog: `BEGIN { print 1 == 1.0, "10" < "9", 10 < 9, "abc" ~ /b/, "abc" !~ /z/ }`, want: "1 1 0 1 1\n"},
	{name: "strnum fields compare as numbers", prog: `{ print ($1 < $2), ($1 == 10), ($3 == "3.0") }`, input: "10 9 3.0\n", want: "0 1 1\n"},
	{name: "string constant compares as string", prog: `BEGIN { x = "3.0"; print (x == 3) }`, want: "0\n"},
	{name: "loops", prog: `BEGIN { while (i < 3) { i++; if (i == 2) continue; printf "%d ", i }; do { j++ } while (j < 5); for (k = 0; k < 2; k++) printf "k%d ", k; print j }`, want: "1 3 k0 k1 5\n"},
	{name: "in and delete", prog: `{ a[$1] = $2 } END { if ("k1" in a) print "yes"; delete a["k1"]; if (!("k1" in a)) print "gone"; print length(a) }`, input: "k1 v1\nk2 v2\n", want: "yes\ngone\n1\n"},
	{name: "field assignment", prog: `{ $2 = ""; print; print NF; $5 = "e"; print; NF = 2; print }`, input: "a b c d\n", want: "a  c d\n4\na  c d e\na \n"},
	{name: "uninitialized", prog: `BEGIN { print length(x), x + 0, "[" x "]", (x == 0), (x == "") }`, want: "0 0 [] 1 1\n"},
	{name: "number output", prog: `BEGIN { print 1e6, 1e16, 123456789, 0.1 + 0.2, 100/3, 1e300*1e300, 010 }`, want: "1000000 10000000000000000 123456789 0.3 33.3333 +inf 8\n"},
	{name: "CONVFMT OFMT", prog: `BEGIN { CONVFMT = "%.2f"; x = 3.14159; y = x ""; print y; OFMT = "%.1f"; print x, 17 }`, want: "3.14\n3.1 17\n"},
	{name: "paragraph mode", prog: `BEGIN { RS = "" } { print NR": "$1"/"NF }`, input: "a b\nc\n\n\nd\n", want: "1: a/3\n2: d/1\n"},
	{name: "RS char", prog: `BEGIN { RS = ";" } { print NR, $0 }`, input: "a;b;c", want: "1 a\n2 b\n3 c\n"},
	{name: "RS regex", prog: `BEGIN { RS = "[,;]+" } { print $0 }`, input: "a,,b;c", want: "a\nb\nc\n"},
	{name: "getline var", prog: `{ getline x; print $0, x }`, input: "1\n2\n3\n", want: "1 2\n3 2\n"},
	{name: "getline plain", prog: `NR == 1 { getline; print "now", $0, NR }`, input: "a\nb\n", want: "now b 2\n"},
	{name: "set $0", prog: `{ $0 = "x y z"; print NF, $2 }`, input: "a b\n", want: "3 y\n"},
	{name: "array by reference", prog: `function f(arr) { arr["y"] = 2; arr["x"]++ } BEGIN { a["x"] = 1; f(a); print a["x"], a["y"] }`, want: "2 2\n"},
	{name: "untyped becomes array", prog: `function g(v) { v[1] = "set" } BEGIN { g(u); print u[1] }`, want: "set\n"},
	{name: "scalar by value", prog: `function f(x) { x = 5 } BEGIN { y = 1; f(y); print y }`, want: "1\n"},
	{name: "locals", prog: `function cnt(a,   k, n) { for (k in a) n++; return n } BEGIN { z["a"]; z["b"]; print cnt(z), k "" n }`, want: "2 \n"},
	{name: "regex pattern", prog: `/ba/ { print NR": "$0 }`, input: "foo\nbar\nbaz\n", want: "2: bar\n3: baz\n"},
	{name: "negated regex", prog: `!/foo/`, input: "foo\nbar\n", want: "bar\n"},
	{name: "length forms", prog: `{ print length, length() }`, input: "hello\n", want: "5 5\n"},
	{name: "utf8 lengths", prog: `BEGIN { print length("héllo"), substr("héllo", 2, 2), index("héllo", "l"), toupper("é") }`, want: "5 él 3 É\n"},
	{name: "exit status", prog: `BEGIN { exit 3 } END { print "end" }`, want: "end\n", status: 3},
	{name: "exit in rule runs END", prog: `{ exit } END { print "end runs" }`, input: "x\n", want: "end runs\n"},
	{name: "exit code kept by END", prog: `{ if (NR == 2) exit 5; print } END { print "end" }`, input: "a\nb\nc\n", want: "a\nend\n", status: 5},
	{name: "next", prog: `NR == 1 { next } { print }`, input: "a\nb\n", want: "b\n"},
	{name: "assignment operand", prog: `{ print v }`, input: "x\n", args: []string{"v=1", "-"}, want: "1\n"},
	{name: "concatenation and minus", prog: `BEGIN { print 1 " " -1; print 2 - -1, 1 - 1; x = y = 3; print x y }`, want: "1-1\n3 0\n33\n"},
	{name: "ternary and not", prog: `BEGIN { print 1 < 2 ? "y" : "n"; print !0, !1, !"", !"a" }`, want: "y\n1 0 1 0\n"},
	{name: "dynamic regex", prog: `BEGIN { re = "[0-9]+"; if ("abc123" ~ re) print "digits"; print "a.c" ~ "a\\.c", "abc" ~ "a\\.c" }`, want: "digits\n1 0\n"},
	{name: "multiple subscripts", prog: `BEGIN { a[1,2] = 3; for (k in a) { split(k, p, SUBSEP); print p[1], p[2] }; print ((1,2) in a) }`, want: "1 2\n1\n"},
	{name: "incr", prog: `BEGIN { x = 5; print x++ + ++x, x; $0 = "5"; $1++; print }`, want: "12 7\n6\n"},
	{name: "printf int edge", prog: `BEGIN { printf "%d %d %i %.0f %o %X %#x %5s|%-5s|%05d|% d|%+d\n", 2147483648, -3.9, "12abc", 2.5, 8, 255, 255, "ab", "ab", 42, 42, 7 }`, want: "2147483648 -3 12 2 10 FF 0xff    ab|ab   |00042| 42|+7\n"},
	{name: "percent", prog: `BEGIN { printf "100%%\n" }`, want: "100%\n"},
	{name: "char", prog: `BEGIN { printf "%c%c%c\n", "hello", 66, 0x43 }`, want: "hBC\n"},
	{name: "blank FS trims", prog: `{ print NF, "[" $1 "]" }`, input: "  lead  trail  \n", want: "2 [lead]\n"},
	{name: "single char FS keeps empties", prog: `BEGIN { FS = ":" } { print NF, "[" $3 "]" }`, input: "a:b::c\n", want: "4 []\n"},
	{name: "regex FS", prog: `BEGIN { FS = "[,;]" } { print $2 }`, input: "a,b;c\n", want: "b\n"},
	{name: "tab FS", prog: `BEGIN { FS = "\t" } { print $2 }`, input: "a b\tc\n", want: "c\n"},
	{name: "empty FS splits chars", prog: `BEGIN { FS = "" } { print NF, $2 }`, input: "abc\n", want: "3 b\n"},
	{name: "numeric strings", prog: `{ for (i = 1; i <= NF; i++) printf "%s ", $i + 0; print "" }`, input: "0x1A 010 1e3 .5 +3 -2.\n", want: "0 10 1000 0.5 3 -2 \n"},
	{name: "comments and newlines", prog: "# c\nBEGIN {   # another\n  x = 1   # trailing\n  if (x)\n    print \"multi\"\n  else\n    print \"no\"\n}", want: "multi\n"},
	{name: "semicolon else", prog: `BEGIN { if (0) print "a"; else print "b" }`, want: "b\n"},
	{name: "print redirect to stderr", prog: `BEGIN { print "err" > "/dev/stderr"; print "out" }`, want: "out\n"},
	{name: "sprintf too few args", prog: `BEGIN { printf "%s %s\n", "a" }`, status: 2},
	{name: "division by zero", prog: `BEGIN { x = 0; print 1 / x }`, status: 2},
	{name: "end $0 kept", prog: `END { print $0, NF }`, input: "x y\n", want: "x y 2\n"},
	{name: "split empty", prog: `BEGIN { n = split("", arr); print n, length(arr) }`, want: "0 0\n"},
	{name: "delete whole array", prog: `BEGIN { x[1]; x[2]; for (k in x) n++; delete x; for (k in x) n++; print n }`, want: "2\n"},
	{name: "int math", prog: `BEGIN { print int(3.9), int(-3.9), sqrt(16), exp(0), log(1), 10 % 3.5 }`, want: "3 -3 4 1 0 3\n"},
	{name: "getline from file", prog: `BEGIN { while ((getline line < "f") > 0) n++; print n, (getline x < "nofile") }`, want: "2 -1\n"},
	{name: "print to file", prog: `BEGIN { print "a" > "out"; print "b" > "out"; close("out"); while ((getline l < "out") > 0) print "got", l }`, want: "got a\ngot b\n"},
	{name: "FILENAME FNR", prog: `{ print FILENAME, FNR, NR }`, args: []string{"f", "f"}, want: "f 1 1\nf 2 2\nf 1 3\nf 2 4\n"},
	{name: "missing file", prog: `{ print }`, args: []string{"nope"}, status: 2},
	{name: "ENVIRON", prog: `BEGIN { print ENVIRON["HOME"] }`, want: "/home/x\n"},
	{name: "ARGV", prog: `BEGIN { for (i = 0; i < ARGC; i++) print i, ARGV[i] }`, args: []string{"a", "b=1"}, want: "0 awk\n1 a\n2 b=1\n"},
}

// memFiles is a Config's file system: name -> content.
func memConfig(input string, args []string, files map[string]*bytes.Buffer) (*Config, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &Config{
		Stdin:   strings.NewReader(input),
		Stdout:  &out,
		Stderr:  &errOut,
		Args:    args,
		Environ: []string{"HOME=/home/x"},
		Open: func(name string) (io.Reader, error) {
			b, ok := files[name]
			if !ok {
				return nil, errors.New("No such file or directory")
			}
			return bytes.NewReader(b.Bytes()), nil
		},
		Create: func(name string, appendTo bool) (io.Writer, error) {
			b, ok := files[name]
			if !ok || !appendTo {
				b = &bytes.Buffer{}
				files[name] = b
			}
			return b, nil
		},
	}, &out, &errOut
}

func TestAwk(t *testing.T) {
	for _, tc := range awkCases {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := Compile(tc.prog)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			files := map[string]*bytes.Buffer{"f": bytes.NewBufferString("1\n2\n")}
			cfg, out, errOut := memConfig(tc.input, tc.args, files)
			status, err := prog.Run(context.Background(), cfg)
			if err != nil && tc.status == 0 {
				t.Fatalf("Run: %v", err)
			}
			if out.String() != tc.want || status != tc.status {
				t.Errorf("program %s\nstdout %q; want %q\nstatus %d; want %d (err %v, stderr %q)", tc.prog, out.String(), tc.want, status, tc.status, err, errOut.String())
			}
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct{ prog, msg string }{
		{`{ print $1 `, "line 1, column 12: missing } at the end of the program"},
		{`BEGIN { x = ; }`, "unexpected ;"},
		{`{ print "unterminated }`, "unterminated string"},
		{`/unterminated`, "unterminated regular expression"},
		{`function f(a, a) {}`, "parameter a twice"},
		{`BEGIN { f() }`, "function f is called but never defined"},
		{`BEGIN { break }`, "break outside a loop"},
		{`BEGIN { return 1 }`, "return outside a function"},
		{`BEGIN { substr("a") }`, "substr takes 2 to 3 arguments, not 1"},
		{`BEGIN { 3 = 4 }`, "cannot assign"},
		{`BEGIN { print "a" |& "cat" }`, "not supported"},
		{`BEGIN { x = /a(/ }`, "invalid regular expression"},
		{`BEGIN { x = /[/ }`, "unterminated regular expression"},
		{strings.Repeat("(", 2000) + "1" + strings.Repeat(")", 2000), "nests too deeply"},
		{"BEGIN { x = 1 @ 2 }", "unexpected character"},
	} {
		_, err := Compile(tc.prog)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Compile(%.40q) = %v; want a SyntaxError with %q", tc.prog, err, tc.msg)
		}
	}
}

// TestLimits: recursion and endless loops are stopped, never hang or
// crash.
func TestLimits(t *testing.T) {
	prog, err := Compile(`function f(n) { return f(n+1) } BEGIN { f(1) }`)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, _ := memConfig("", nil, nil)
	if _, err := prog.Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "function call nesting too deep") {
		t.Errorf("endless recursion: %v", err)
	}
	prog, err = Compile(`BEGIN { while (1) x++ }`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	cfg, _, _ = memConfig("", nil, nil)
	if _, err := prog.Run(ctx, cfg); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("endless loop: %v", err)
	}
}

// TestProgramReuse: a compiled program runs many times, concurrently,
// with independent state.
func TestProgramReuse(t *testing.T) {
	prog, err := Compile(`/x/,/y/ { n++ } END { print n + 0 }`)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 8)
	for range 8 {
		go func() {
			cfg, out, _ := memConfig("x\na\ny\nb\n", nil, nil)
			prog.Run(context.Background(), cfg)
			done <- out.String()
		}()
	}
	for range 8 {
		if got := <-done; got != "3\n" {
			t.Errorf("got %q; want 3", got)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, tc := range awkCases {
		f.Add(tc.prog)
	}
	f.Fuzz(func(t *testing.T, src string) {
		prog, err := Compile(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Compile(%q) returned %T, not a *SyntaxError: %v", src, err, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		cfg, _, _ := memConfig("a b c\n1 2 3\n", nil, map[string]*bytes.Buffer{})
		cfg.MaxDepth = 50
		cfg.Stdout = &capped{n: 1 << 16}
		prog.Run(ctx, cfg) // must return, never panic
	})
}

// capped is a writer that fails past n bytes, like the sandbox's output
// bound.
type capped struct{ n int }

func (c *capped) Write(p []byte) (int, error) {
	if len(p) > c.n {
		return 0, errors.New("output too large")
	}
	c.n -= len(p)
	return len(p), nil
}

// TestMemoryBounds: doubling a string or filling an array fails at the
// bound instead of exhausting memory.
func TestMemoryBounds(t *testing.T) {
	for _, tc := range []struct{ prog, msg string }{
		{`BEGIN { s = "x"; while (1) s = s s }`, "exceeds the limit of 1024 bytes"},
		{`BEGIN { while (1) a[i++] = 1 }`, "more than 100 elements"},
		{`BEGIN { s = "xx"; while (1) gsub(/x/, "&&", s) }`, "exceeds the limit"},
		{`BEGIN { $2000000 = 1 }`, "too large"},
	} {
		prog, err := Compile(tc.prog)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, _ := memConfig("", nil, nil)
		cfg.MaxStringBytes, cfg.MaxArrayElems = 1024, 100
		_, err = prog.Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v; want %q", tc.prog, err, tc.msg)
		}
	}
}
