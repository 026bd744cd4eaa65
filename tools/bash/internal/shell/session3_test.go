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
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, status := run(t, tc.script)
			if out != tc.out || status != tc.status {
				t.Errorf("%q:\nstdout %q, status %d\nwant   %q, status %d\n(stderr %q)", tc.script, out, status, tc.out, tc.status, errOut)
			}
		})
	}
}
