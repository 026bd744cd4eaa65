package shell

import "testing"

// TestBashParity holds scripts whose stdout and status were checked
// against bash 5.2 (bash -c '...'), one group per fix.
func TestBashParity(t *testing.T) {
	for _, tc := range []struct {
		name, script, out string
		status            int
	}{
		{"debug trap runs inside a signal trap",
			"trap 'false; echo $LINENO usr1' USR1\ntrap 'echo $LINENO dbg' DEBUG\nkill -USR1 $$\necho after=$?\n",
			"3 dbg\n1 dbg\n1 dbg\n1 usr1\n4 dbg\nafter=0\n", 0},
		{"debug trap runs inside the err trap, not inside itself",
			"trap 'false; echo $LINENO err' ERR\ntrap 'false; echo $LINENO debug' DEBUG\nfalse\n",
			"3 err\n3 debug\n3 debug\n3 debug\n3 err\n", 1},
		{"debug trap runs inside the exit trap",
			"trap 'echo d' DEBUG\ntrap 'echo x1' EXIT\ntrue\n",
			"d\nd\nd\nx1\n", 0},
		{"a trap's commands leave BASH_COMMAND alone",
			"trap 'echo a; echo $BASH_COMMAND' ERR\nfalse\n",
			"a\nfalse\n", 1},
		{"a character range holding a backquote: bad substitution ends the command",
			"echo -{z..A}-\necho st=$?\n", "st=1\n", 0},
		{"a bare backquote from a range is itself, a lone backslash an empty word",
			`printf '<%s>' {Z..a}; echo`, "<Z><[><><]><^><_><`><a>\n", 0},
		{"an element assignment before a command is refused, the command runs",
			"f() { echo \"a=$a b=${b-unset} c=$c\"; }\na=1 b[0]=2 c=3 f 2>&1; echo st=$?\ndeclare -p b 2>/dev/null || echo no b\n",
			"a=1 b=unset c=3\nst=0\nno b\n", 0},
		{"a spaced subscript before a command",
			"a=(0 1 2)\na[0 + 1]='foo' echo b[2 + 0]='bar'\necho status=$?\ndeclare -p a\n# a[ comment\na[1 + 2]+= echo x\n",
			"b[2 + 0]=bar\nstatus=0\ndeclare -a a=([0]=\"0\" [1]=\"1\" [2]=\"2\")\nx\n", 0},
		{"name[...] in a command's place is one word, blanks included",
			"a[5 + 3]+\necho st=$?\nf() { echo \"$# $1\"; }\nx=1 a[5 + 3] 2>/dev/null; echo st=$?\n",
			"st=127\nst=127\n", 0},
		{"[k]+=v in an array literal appends",
			"hello=100\na=([hello]=1 [hello]+=2)\na+=([hello]+=:34 [hello]+=:56)\ndeclare -p a\n",
			"declare -a a=([100]=\"12:34:56\")\n", 0},
		{"[k]+=v in an associative literal appends to the value it replaces",
			"declare -A a=([k]=old)\na=([k]=1 [k]+=2 [j]+=x)\ndeclare -p a\nf() { local -A m=([k]+=1 [k]+=\"2 3\"); declare -p m; }\nf\n",
			"declare -A a=([k]=\"old2\" [j]=\"x\" )\ndeclare -A m=([k]=\"2 3\" )\n", 0},
		{"[k]=v{a,b} in an indexed literal makes plain values",
			"a=([k2]=-{a,b}- [5]=y)\ndeclare -p a\ndeclare -A c=([k]={a,b})\ndeclare -p c\n",
			"declare -a a=([0]=\"[k2]=-a-\" [1]=\"[k2]=-b-\" [5]=\"y\")\ndeclare -A c=([k]=\"{a,b}\" )\n", 0},
		{"`...` with an unclosed double quote fails when expanded, not when parsed",
			"x=`echo \"`; echo \"st=$? x=$x\"\necho a `echo \"` b\necho st=$?\n",
			"st=2 x=\na b\nst=0\n", 0},
		{"a background simple command, subshell or pipeline runs no ERR trap for its own status",
			"set -o errtrace\ntrap 'echo line=$LINENO' ERR\nfalse & wait\n(false) & wait\nfalse | false & wait\n[[ a = b ]] & wait\n{ false; echo async; } & wait\n",
			"line=4\nline=6\nline=7\nasync\n", 0},
		{"a subshell as a pipeline's last stage: the ERR trap runs twice",
			"trap 'echo e' ERR\n(false) | (false)\ntrue | (true; false)\ntrue | (false; true)\n(false) | true\n{ false; } | { false; }\n",
			"e\ne\ne\ne\ne\n", 1},
		{"with errtrace a simple command as a pipeline's last stage runs it once",
			"set -E\ntrap 'echo e' ERR\ntrue | false\ntrue | (false)\n",
			"e\ne\ne\ne\n", 1},
		{"declare reads a subscript with blanks as bash's separate words",
			"declare a[a[0]=1]=X\ndeclare a[ a[2]=3 ]=Y\necho st=$?\ndeclare -p a\ndeclare b[1 + 2]=x 2>&1\n",
			"st=1\ndeclare -a a=([0]=\"1\" [1]=\"X\" [2]=\"3\")\nbash: line 5: declare: `b[1': not a valid identifier\nbash: line 5: declare: `+': not a valid identifier\nbash: line 5: declare: `2]=x': not a valid identifier\n", 1},
		{"`...` inside double quotes loses the backslashes before \\ and \"",
			"file=/tmp/f\necho \"123 `[[ $(echo \\\\\" > $file) ]]` 456\";\nread -r line < $file; echo \"$line\"\n",
			"123  456\n\"\n", 0},
		{"a here-document in an alias takes its body from the script's next lines",
			"shopt -s expand_aliases\nalias r='read -r x <<EOF\necho from-alias\nEOF\n'\nr\nline1\nEOF\necho \"x=$x\"\n",
			"from-alias\nx=line1\n", 0},
		{"... and from nothing at the end of the script",
			"shopt -s expand_aliases\nalias r='read -r x <<EOF\necho from-alias $x\n'\necho before\nr\n",
			"before\nfrom-alias\n", 0},
		{"${a[]} is a bad substitution, ${a[ ]} is a[0]",
			"a=(1 2 3)\necho ${a[ ]}\necho ${a[]}\necho status=$?\n",
			"1\nstatus=1\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, status := run(t, tc.script)
			if out != tc.out || status != tc.status {
				t.Errorf("%q:\nstdout %q, status %d\nwant   %q, status %d\n(stderr %q)", tc.script, out, status, tc.out, tc.status, errOut)
			}
		})
	}
}
