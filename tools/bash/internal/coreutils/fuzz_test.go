package coreutils

import (
	"context"
	"strings"
	"testing"
	"time"
)

// fuzzRun runs a command on input with a deadline and checks that it
// neither panics nor overruns.
func fuzzRun(t *testing.T, name string, args []string, stdin string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, _, status := runCmd(t, ctx, name, args, stdin, &Env{MaxInputBytes: 1 << 16})
	if status < 0 || status > 255 {
		t.Fatalf("%s %q: status %d", name, args, status)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("%s %q took %v", name, args, d)
	}
}

func FuzzPrintf(f *testing.F) {
	for _, s := range []string{"%s-%s\\n", "%.2f %e %g", "%*d|%-*d|", "%b", "%q", "\\101\\x42\\u00e9", "%", "%5.3s", "%#o"} {
		f.Add(s, "3.14", "abc")
	}
	f.Fuzz(func(t *testing.T, format, a, b string) {
		fuzzRun(t, "printf", []string{format, a, b}, "")
	})
}

func FuzzSed(f *testing.F) {
	for _, s := range []string{"s/o/0/g", "-n 2,3p", "$d", "/t/!d", "/two/,+1p", "y/abc/xyz/", "1i\\header", "2q", "s/\\(o\\)/<\\1>/", "-E s/(a|b)+/X/2"} {
		f.Add(s, "one\ntwo\nthree\n")
	}
	f.Fuzz(func(t *testing.T, script, input string) {
		fuzzRun(t, "sed", strings.Fields(script), input)
	})
}

func FuzzGrep(f *testing.F) {
	for _, s := range []string{"ap", "-i banana", "-o p[a-z]", "-E ^(a|c)+$", "-w app", "-F a.p", `ch\(er\)ry`, "[[:digit:]]"} {
		f.Add(s, "apple\nBanana\ncherry\n")
	}
	f.Fuzz(func(t *testing.T, args, input string) {
		fuzzRun(t, "grep", strings.Fields(args), input)
	})
}

func FuzzJQ(f *testing.F) {
	for _, s := range []string{".", ".a", "-r .[]", "-s add", "-c map(.*2)", "[inputs]", ".a.b", "reduce .[] as $x (0; .+$x)"} {
		f.Add(s, `{"a":[1,2,3]}`)
	}
	f.Fuzz(func(t *testing.T, args, input string) {
		fuzzRun(t, "jq", strings.Fields(args), input)
	})
}

func FuzzText(f *testing.F) {
	for _, c := range []struct{ cmd, args string }{
		{"sort", "-t , -k 2n"}, {"cut", "-d : -f 1,3-"}, {"tr", "a-z A-Z"}, {"tr", "-cd [:alnum:]"},
		{"head", "-n -2"}, {"tail", "-n +2"}, {"uniq", "-c"}, {"seq", "1 0.5 3"}, {"base64", "-d"}, {"wc", "-lwm"},
		{"date", "+%F%T%N%:z"}, {"basename", "-s .go a.go"}, {"dirname", "a/b/"},
	} {
		f.Add(c.cmd, c.args, "b,2\na,1\nc:3\n")
	}
	f.Fuzz(func(t *testing.T, cmd, args, input string) {
		if cmd == "xargs" {
			return
		}
		if _, ok := Lookup(cmd); !ok {
			return
		}
		fuzzRun(t, cmd, strings.Fields(args), input)
	})
}
