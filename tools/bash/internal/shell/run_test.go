package shell

import (
	"context"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// run runs a script in a fresh shell and returns its stdout, stderr and
// status.
func run(t testing.TB, script string) (string, string, int) {
	t.Helper()
	var out, errOut strings.Builder
	r := New(Config{FS: vfs.New(vfs.Options{}), Stdout: &out, Stderr: &errOut})
	res := r.Run(context.Background(), script)
	return out.String(), errOut.String(), res.Status
}

func TestRunBasics(t *testing.T) {
	for _, tc := range []struct{ script, out string }{
		{"echo hi", "hi\n"},
		{"base=16; echo $(( ${base}#a ))", "10\n"},
		{"if ! ((test a = b) || (test c = d)); then echo yes; fi", "yes\n"},
	} {
		out, errOut, _ := run(t, tc.script)
		if out != tc.out {
			t.Errorf("%q: stdout %q, want %q (stderr %q)", tc.script, out, tc.out, errOut)
		}
	}
}

// TestBashSuiteFixes holds differences from bash that GNU bash's own
// tests showed (tools/bash/bashtests_test.go), each checked against bash
// 5.2.
func TestBashSuiteFixes(t *testing.T) {
	for _, tc := range []struct {
		script, out string
		status      int
	}{
		// let's arguments are words: quotes are removed (arith.tests)
		{`iv=2 jv=3; let 'iv *= jv' "jv += $iv"; echo $iv $jv`, "6 5\n", 0},
		// BASH_ALIASES[name]= defines an alias; it panicked (alias.tests)
		{"shopt -s expand_aliases\nBASH_ALIASES[hi]='echo hello'\nhi\nalias", "hello\nalias hi='echo hello'\n", 0},
		{`BASH_ALIASES['\$']=xx; echo not reached`, "", 1},
		{`BASH_CMDS[x]=/bin/ls; echo $?`, "0\n", 0},
		// set -o posix turns inherit_errexit on, for good (set-e.tests)
		{`set -o posix; set -e; z=$(false; echo posix foo); echo "[$z]"`, "", 1},
		{`set -o posix; set +o posix; shopt -q inherit_errexit && echo on`, "on\n", 0},
		{`set -e; z=$(false; echo non-posix foo); echo "[$z]"`, "[non-posix foo]\n", 0},
		// a compound assignment of non-words fails its line only (array.tests)
		{"echo a\ntest=(first & second)\necho $?\necho b\n", "a\n1\nb\n", 0},
		{"f() {\n  c=(p & q)\n}\necho not reached\n", "", 2},
		// a subscript mvdan cannot parse is expanded, then evaluated (array.tests)
		{"_ENV=/bin/true\nx=${_ENV[(_$-=0)+(_=1)-_${-%%*i*}]}\necho \"[$x]\" $?\na=(p q r); i=1; echo ${a[(_$-=0)+i+1]}", "[] 0\nr\n", 0},
		// $'\x{HH}' and $'\c?', $'\c\\' (nquote.tests, nquote4.tests)
		{`x=$'ab\x{41}cd'; y=$'\x{}'; z=$'a\x{4}b'; echo $x ${#y}; printf '%q\n' "$z" $'\c?\c[\c\\\cA'`, "abAcd 0\n$'a\\004b'\n$'\\177\\E\\034\\001'\n", 0},
		// a function with a local OPTIND gives the caller's getopts back
		// its place inside -xyz; it looped for ever (getopts.tests)
		{"f() {\n typeset OPTIND=1 opt\n while getopts :abcxyz opt && ((n++ < 20)); do echo -n $opt; if [[ $opt = y ]]; then f -abc; fi; done\n}\nf -xyz; echo", "xyabcz\n", 0},
		{"a=(1 2 3)\necho ${a[]}\necho status=$?", "status=1\n", 0},
		// %(%c)T of a two-digit day has one space, as strftime's %e
		{`printf '%(%c)T\n' 946684799`, "Fri Dec 31 23:59:59 1999\n", 0},
		// declare name[N] makes an indexed array; BASH_ALIASES and
		// BASH_CMDS print as assigned (array.tests, assoc.tests)
		{`declare -r c[100]; declare -A f; declare f[x]; declare -p c f BASH_CMDS`, "declare -ar c\ndeclare -A f\ndeclare -A BASH_CMDS=()\n", 0},
		// a for loop's bad name ends the shell in POSIX mode (errors.tests)
		{"(set -o posix; for a-b in 1; do :; done; echo after); echo $?\nfor a-b in 1; do :; done; echo $?", "2\n1\n", 0},
	} {
		out, errOut, status := run(t, tc.script)
		if out != tc.out || status != tc.status {
			t.Errorf("%q: stdout %q status %d, want %q status %d (stderr %q)", tc.script, out, status, tc.out, tc.status, errOut)
		}
	}
}

// TestBuiltinUsage checks the usage errors of builtins against bash 5.2:
// the usage line has no "bash: line N:" prefix (errors.tests,
// builtins.tests).
func TestBuiltinUsage(t *testing.T) {
	for _, tc := range []struct {
		script, out, errOut string
	}{
		{`unalias; echo $?`, "2\n", "unalias: usage: unalias [-a] name [name ...]\n"},
		{`alias -x foo=bar; echo $?`, "2\n", "bash: line 1: alias: -x: invalid option\nalias: usage: alias [-p] [name[=value] ... ]\n"},
		{`alias -pq; echo $?`, "2\n", "bash: line 1: alias: -q: invalid option\nalias: usage: alias [-p] [name[=value] ... ]\n"},
		{`unalias -x foo; echo $?`, "2\n", "bash: line 1: unalias: -x: invalid option\nunalias: usage: unalias [-a] name [name ...]\n"},
		{`printf; echo $?`, "2\n", "printf: usage: printf [-v var] format [arguments]\n"},
		{`shopt -x; echo $?`, "2\n", "bash: line 1: shopt: -x: invalid option\nshopt: usage: shopt [-pqsu] [-o] [optname ...]\n"},
		{`dirs -m; echo $?`, "2\n", "bash: line 1: dirs: -m: invalid number\ndirs: usage: dirs [-clpv] [+N] [-N]\n"},
		{`printf -v; echo $?`, "2\n", "bash: line 1: printf: -v: option requires an argument\nprintf: usage: printf [-v var] format [arguments]\n"},
		{`for f in 1 2 3; do break -- 5; done; echo $?`, "0\n", ""},
		{`for f in 1 2; do for g in 3 4; do echo $f$g; continue -- 2; done; done`, "13\n23\n", ""},
	} {
		out, errOut, _ := run(t, tc.script)
		if out != tc.out || errOut != tc.errOut {
			t.Errorf("%q: stdout %q stderr %q, want %q and %q", tc.script, out, errOut, tc.out, tc.errOut)
		}
	}
}
