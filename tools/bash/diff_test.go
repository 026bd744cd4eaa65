package bash

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// diffScripts are pure-shell scripts (plus the sandbox's utilities) whose
// stdout and exit status must equal /bin/bash's with the host's GNU
// utilities. Known mvdan differences are left out: the last pipeline stage
// runs in the current shell, a bare `return` returns 0, ${#assoc[@]} is 1.
var diffScripts = []string{
	`echo hello world`,
	`x=5; y=3; echo $((x + y)) $((x * y)) $((x % y)) $((x ** 2))`,
	`s="Hello World"; echo ${#s} ${s^^} ${s,,} ${s/World/There} ${s:0:5} ${s#He} ${s%ld}`,
	`a=(one two three); echo ${#a[@]} ${a[1]} "${a[@]:1}"; a+=(four); echo ${a[-1]}`,
	`for i in 1 2 3; do echo "i=$i"; done`,
	`i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i`,
	`for ((i=0; i<5; i+=2)); do printf '%d,' $i; done; echo`,
	`case foo.txt in *.md) echo md;; *.txt) echo txt;; esac`,
	`f() { echo "args: $# $1 $2"; return 3; }; f a b; echo rc=$?`,
	`f() { local x=inner; echo $x; }; x=outer; f; echo $x`,
	`echo $(echo nested $(echo deep))`,
	`if [[ abc == a* && 3 -gt 2 ]]; then echo yes; fi; [[ foo =~ ^f(o+)$ ]] && echo ${BASH_REMATCH[1]}`,
	`false || echo fallback; true && echo chained; ! false && echo negated`,
	`cat <<EOF
line $((1+1))
EOF`,
	`read -r a b <<< "x y z"; echo "$a|$b"`,
	`printf '%s-%s\n' a b c d`,
	`printf '%5.2f|%-6s|%03d|%x|%o|%e|%g\n' 3.14159 ab 7 255 8 12345.678 0.0001`,
	`printf '%q\n' "a b" "it's"`,
	`printf -v x '%05.1f|%s\n' 3.14159 y; echo "[$x]"`,
	`printf 'a\tb\\n\n'; printf '%b\n' 'x\ty'`,
	`seq 1 5 | sort -rn | head -3`,
	`seq 1 10 | tail -n 3; seq 5 | tail -n +4`,
	`printf 'b\na\nc\na\n' | sort | uniq -c`,
	`printf 'b\na\nc\na\n' | sort -u`,
	`printf 'x 3\ny 1\nz 2\n' | sort -k2 -n`,
	`printf 'a:b:c\n1:2:3\n' | cut -d: -f2,3`,
	`echo 'hello world' | tr a-z A-Z; echo 'aabbcc' | tr -s a-c; echo 'a1b2' | tr -d 0-9`,
	`printf 'one\ntwo\nthree\n' | grep -n o; printf 'one\ntwo\n' | grep -c o; printf 'Ab\nab\n' | grep -i -v AB; echo rc=$?`,
	`printf 'foo bar\nbaz\n' | grep -E 'ba(r|z)' -o`,
	`printf 'a b c\n' | wc -w; printf 'a\nb\n' | wc -l`,
	`echo 'hello world' | sed 's/o/0/g'; echo abc | sed -E 's/(a)(b)/\2\1/'`,
	`printf '1\n2\n3\n4\n' | sed -n '2,3p'; printf '1\n2\n3\n' | sed '2d'; printf 'a\nb\n' | sed '$d'`,
	`printf 'x\ny\n' | sed '1i head' ; echo done`,
	"echo μ | sed 's/\\xce//g' | od -An -tx1; echo abc | sed 's/\\x62/X/; s/c/\\x41/'; echo 'abc a.c' | sed 's/a\\x2ec/X/g'; echo 'aμb' | sed 's/\\xce\\xbc/M/'; echo abc | sed 's/b/μ/'; printf 'a\\xffb\\n' | sed 's/a/[&]/; s/\\xff/Y/'; echo 'μμ' | sed -n '/\\xbc\\xce/p' | od -An -tx1",
	`seq 3 | xargs echo; echo 'a b c' | xargs -n 1 echo`,
	`basename /a/b/c.txt .txt; dirname /a/b/c.txt; basename /; dirname rel`,
	`echo -n hello | base64; echo aGVsbG8= | base64 -d; echo`,
	`seq 2 2 8; seq -s, 3; seq -w 8 10`,
	`echo '{"a":[1,2,3]}' | jq -c '.a | map(. * 2)'`,
	`echo '[{"n":"x","v":1},{"n":"y","v":2}]' | jq -r '.[] | select(.v > 1) | .n'`,
	`echo '{"a":1}' | jq '.a + 1'; echo '"s"' | jq -r .`,
	`jq -n --arg x hi '$x'; jq -n '[range(3)] | add'`,
	`echo '{"a":null}' | jq -e .a; echo rc=$?`,
	`x=$(printf 'a\nb\n' | head -1); echo "[$x]"`,
	`set -- a b c; shift; echo "$@" $#`,
	`v=; echo ${v:-default} ${v:=assigned} $v`,
	`echo {1..3} {a,b}x`,
	`exit 7`,
	`set -e; echo start; false; echo never`,
	`printf '%s\n' "$(echo '  spaced  ')"`,
	`declare -A m; m[k]=v; echo ${m[k]}`,
	`IFS=,; set -- $(echo a,b,c); echo $2`,
	`echo "tab	inside" | cut -f2`,
	`printf 'x\n' | tee /dev/null`,
	`echo abc | head -c 2; echo`,
	`test 3 -lt 4 && echo lt; [ "a" = "a" ] && echo eq; [ -z "" ] && echo empty`,
	`getopts ab: opt -b val; echo $opt $OPTARG`,
	`arr=(3 1 2); IFS=$'\n' sorted=($(printf '%s\n' "${arr[@]}" | sort)); echo ${sorted[@]}`,
	`echo $((16#ff)) $((2#101)) $(( (3 + 4) * 2 ))`,
}

func TestDifferentialBash(t *testing.T) {
	bash, err := exec.LookPath("/bin/bash")
	if err != nil {
		t.Skip("/bin/bash is not installed")
	}
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed on the host: the differential test compares with the real tools")
	}
	st := NewBuilder("diff").MustBuild()
	dir := t.TempDir()
	for _, script := range diffScripts {
		t.Run(script, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), bash, "--norc", "--noprofile", "-c", script)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "HOME=/"}
			var out bytes.Buffer
			cmd.Stdout = &out
			err := cmd.Run()
			wantExit := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				wantExit = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			res := run(t, st, script)
			if res.Stdout != out.String() || res.ExitCode != wantExit {
				t.Errorf("sandbox: %q exit %d (stderr %q)\nbash:    %q exit %d", res.Stdout, res.ExitCode, res.Stderr, out.String(), wantExit)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("bash scripts wrote files; the differential scripts must be pure")
	}
}
