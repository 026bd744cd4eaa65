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

// FuzzTarList reads arbitrary bytes as an archive (tar headers, gzip and
// bzip2 streams): tar must report, never panic or overrun.
func FuzzTarList(f *testing.F) {
	f.Add("ustar\x00", "-tv")
	f.Add("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "-tzf -")
	f.Add("BZh91AY&SY", "-t")
	f.Add(strings.Repeat("\x00", 1024), "-xOf -")
	f.Fuzz(func(t *testing.T, archive, args string) {
		fuzzRun(t, "tar", strings.Fields(args), archive)
	})
}

// FuzzNumfmt feeds numbers and options to numfmt's parsers (number
// syntax, units, --format, --field).
func FuzzNumfmt(f *testing.F) {
	for _, s := range []string{"--to=iec 1536", "--from=iec 1.5M", "--from=auto 1Ki", "--format=%08.2f 12", "--field=2- --to=si", "--to=iec-i --round=down -- -2048", "--suffix=B --padding=-8 5"} {
		f.Add(s, "name 2048 x\n 1048576\n")
	}
	f.Fuzz(func(t *testing.T, args, input string) {
		fuzzRun(t, "numfmt", strings.Fields(args), input)
	})
}

// FuzzDumps: xxd (and its -r parser), hexdump, strings and file on
// arbitrary bytes.
func FuzzDumps(f *testing.F) {
	for _, c := range []struct{ cmd, args string }{
		{"xxd", ""}, {"xxd", "-r"}, {"xxd", "-r -p"}, {"xxd", "-i -c 5"}, {"xxd", "-b -s -3"},
		{"hexdump", "-C"}, {"hd", "-n 4"}, {"strings", "-n 2 -t x"}, {"file", "-"}, {"file", "-i -"},
		{"unexpand", "-a -t 4,8"}, {"shuf", "-n 2"}, {"join", "-t, - -"},
	} {
		f.Add(c.cmd, c.args, "00000000: 6865 6c6c 6f0a  hello.\n\x89PNG\r\n\x1a\n")
	}
	f.Fuzz(func(t *testing.T, cmd, args, input string) {
		switch cmd {
		case "xxd", "hexdump", "hd", "strings", "file", "unexpand", "shuf", "join":
			fuzzRun(t, cmd, strings.Fields(args), input)
		}
	})
}
