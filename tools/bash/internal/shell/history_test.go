package shell

import "testing"

// TestHistory holds scripts of the history list (history.go) whose stdout
// and status were checked against bash 5.2 (bash -c '...').
func TestHistory(t *testing.T) {
	for _, tc := range []struct {
		name, script, out string
		status            int
	}{
		{"history -r and -w round-trip through HISTFILE",
			"printf 'echo %s\\n' 1 2 3 > /tmp/h\nHISTFILE=/tmp/h\nhistory -r\nhistory\nhistory -s 'echo 4'\nhistory -w /tmp/h2\necho \"$(< /tmp/h2)\"\n",
			"    1  echo 1\n    2  echo 2\n    3  echo 3\necho 1\necho 2\necho 3\necho 4\n", 0},
		{"history N lists the last N, history -d deletes one or a range",
			"history -s a; history -s b; history -s c; history -s d\nhistory 2\nhistory -d 2\nhistory\nhistory -d 1-2\nhistory\nhistory -d -1\nhistory; echo st=$?\n",
			"    3  c\n    4  d\n    1  a\n    2  c\n    3  d\n    1  d\nst=0\n", 0},
		{"history -d out of range",
			"history -s a\nhistory -d 5 2>&1; echo st=$?\nhistory -d x 2>&1; echo st=$?\nhistory -d 1-x 2>&1; echo st=$?\n",
			"bash: line 2: history: 5: history position out of range\nst=1\nbash: line 3: history: x: history position out of range\nst=1\nbash: line 4: history: 1-x: history position out of range\nst=1\n", 0},
		{"history usage errors",
			"HOME=/tmp; history x 2>&1; echo st=$?\nhistory -z 2>&1; echo st=$?\nhistory -r -w 2>&1; echo st=$?\nhistory -a 2>&1; echo st=$?\nhistory -r 2>&1; echo st=$?\nhistory -s x; history -w; echo \"$(< /tmp/.history)\"; HISTFILE=; history -w; echo st=$?\nhistory 1 2 2>&1; echo not reached\n",
			"bash: line 1: history: x: numeric argument required\nst=1\nbash: line 2: history: -z: invalid option\nhistory: usage: history [-c] [-d offset] [n] or history -anrw [filename] or history -ps arg [arg...]\nst=2\nbash: line 3: history: cannot use more than one of -anrw\nst=1\nst=0\nst=1\nx\nst=1\nbash: line 7: history: too many arguments\n", 1},
		{"history -a appends this session's lines, -n reads new lines",
			"history -s one\nhistory -a /tmp/a\nhistory -s two\nhistory -a /tmp/a\nhistory -a /tmp/a\necho \"$(< /tmp/a)\"\nhistory -c\nprintf 'x\\ny\\n' > /tmp/b\nhistory -r /tmp/b\necho z >> /tmp/b\nhistory -n /tmp/b\nhistory\n",
			"one\ntwo\n    1  x\n    2  y\n    3  z\n", 0},
		{"HISTSIZE stifles the list, HISTFILESIZE cuts the file",
			"printf 'c%s\\n' 1 2 3 4 5 > /tmp/h\nHISTFILE=/tmp/h\nhistory -r\nHISTSIZE=2\nhistory\nhistory -s c6\nhistory\nHISTFILESIZE=3\necho \"$(< /tmp/h)\"\n",
			"    3  c4\n    4  c5\n    4  c5\n    5  c6\nc3\nc4\nc5\n", 0},
		{"history -a with HISTFILE unset appends to ~/.history only when it exists",
			"HOME=/tmp; history -s a; history -a; echo st=$?\n: > /tmp/.history; history -s b; history -a; echo st=$?; echo \"$(< /tmp/.history)\"\n",
			"st=1\nst=0\nb\n", 0},
		{"history -N is an invalid option, +N a count",
			"history -s a; history -1 2>&1; echo st=$?; history +5; echo st=$?\n",
			"bash: line 1: history: -1: invalid option\nhistory: usage: history [-c] [-d offset] [n] or history -anrw [filename] or history -ps arg [arg...]\nst=2\n    1  a\nst=0\n", 0},
		{"history -p prints its words, -c clears",
			"history -s a\nhistory -p x 'y z'\nhistory -c\nhistory; echo st=$?\n",
			"x\ny z\nst=0\n", 0},
		{"fc -l with ranges, -n and -r",
			"for i in 1 2 3 4; do history -s \"echo $i\"; done\nfc -l\nfc -ln 2 3\nfc -lr -2\nfc -l 3 2\nfc -l ech\nfc -l 9\nfc -l nope 2>&1; echo st=$?\n",
			"1\t echo 1\n2\t echo 2\n3\t echo 3\n4\t echo 4\n\t echo 2\n\t echo 3\n4\t echo 4\n3\t echo 3\n3\t echo 3\n2\t echo 2\n4\t echo 4\n1\t echo 1\n2\t echo 2\n3\t echo 3\n4\t echo 4\nbash: line 8: fc: no command found\nst=1\n", 0},
		{"fc -s re-runs a command with replacements",
			"history -s 'echo a b'\nhistory -s 'echo c'\nfc -s 2>&1\nfc -s b=B a=A 1 2>&1\nhistory\nfc -s nope 2>&1; echo st=$?\n",
			"echo c\nc\necho A B\nA B\n    1  echo a b\n    2  echo A B\nbash: line 6: fc: no command found\nst=1\n", 0},
		{"fc -e edits with a command of the sandbox and runs the result",
			"history -s 'echo one'\nhistory -s 'echo two'\nhistory -s 'echo three'\nfc -e false 1 2>&1; echo st=$?\nhistory; edit() { echo \"edit $1\" >&2; printf 'echo 1\\n' > \"$1\"; }; fc -e edit 1 2 2>/dev/null; echo st=$?; history\n",
			"st=1\n    1  echo one\n    2  echo two\n1\nst=0\n    1  echo one\n    2  echo 1\n", 0},
		{"fc with no history",
			"fc -l; echo st=$?\nfc -s 2>&1; echo st=$?\nfc -l 0 1 2; echo st=$?\n",
			"st=0\nbash: line 2: fc: no command found\nst=1\nst=0\n", 0},
		{"fc numbers against the last entry it deals with, as bash",
			"history -s a; history -s b; history -s c\nfc -l 3; echo --; fc -l 2; echo --; fc -l 0; echo --; fc -l 1 0; fc -l -1; fc -l -9 -1; fc -lr 1 c\n",
			"1\t a\n2\t b\n3\t c\n--\n2\t b\n3\t c\n--\n3\t c\n--\n1\t a\n2\t b\n3\t c\n3\t c\n1\t a\n2\t b\n3\t c\n3\t c\n2\t b\n1\t a\n", 0},
		{"set -o history records the script's lines, joined as bash does",
			"set -o history\nif true\nthen echo a\nfi\nfor i in 1; do\n  echo $i\ndone\necho x |\n  { read -r l; echo $l; }\n\n# c\nhistory\necho one\necho two; history 2\nfc -l -3\nfc -s one=three 2>&1\nhistory\nset +o history\necho nope\nhistory 3\n",
			"a\n1\nx\n    1  if true; then echo a; fi\n    2  for i in 1; do   echo $i; done\n    3  echo x |   { read -r l; echo $l; }\n    4  # c\n    5  history\none\ntwo\n    6  echo one\n    7  echo two; history 2\n5\t history\n6\t echo one\n7\t echo two; history 2\nfc -l -3\n7\t echo two; history 2\n8\t fc -l -3\n9\t fc -l -3\n    1  if true; then echo a; fi\n    2  for i in 1; do   echo $i; done\n    3  echo x |   { read -r l; echo $l; }\n    4  # c\n    5  history\n    6  echo one\n    7  echo two; history 2\n    8  fc -l -3\n    9  fc -l -3\n   10  history\nnope\n    9  fc -l -3\n   10  history\n   11  set +o history\n", 0},
		{"after fc -e the script's lines are recorded, as bash leaves remember_on_history set",
			"history -s 'echo one'\nhistory -s 'echo two'\nfc -e true 1 2>&1\necho after\nhistory\nfc -l\nfc -e true -1 2>&1; echo st=$?\nhistory\n",
			"echo one\none\nafter\n    1  echo one\n    2  echo one\n    3  echo after\n    4  history\n1\t echo one\n2\t echo one\n3\t echo after\n4\t history\nfc -l\n1\t echo one\n2\t echo one\n3\t echo after\n4\t history\n5\t fc -l\nst=0\n    1  echo one\n    2  echo one\n    3  echo after\n    4  history\n    5  fc -l\n    6  fc -l\n    7  history\n", 0},
		{"a subshell's history is its own",
			"shopt -s lastpipe; history -s z; history | { history -s b; history; } | { history -s x; read -r l; echo \"$l\"; } | history -s c; history; (history -c); history -d 1\nhistory -s a\n(history -s b; history)\nhistory\necho x | { history -c; history; }\nhistory\n",
			"    1  z\n    2  c\n    1  c\n    2  a\n    3  b\n    1  c\n    2  a\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, status := run(t, tc.script)
			if out != tc.out || status != tc.status {
				t.Errorf("%q:\nstdout %q, status %d\nwant   %q, status %d\n(stderr %q)", tc.script, out, status, tc.out, tc.status, errOut)
			}
		})
	}
}
