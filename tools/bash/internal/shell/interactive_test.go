package shell

import "testing"

// TestInteractive holds scripts that run bash -i with commands on its
// stdin (interactive.go); their stdout and status are bash 5.2's
// (env -i PATH=/usr/bin:/bin bash -c '...').
func TestInteractive(t *testing.T) {
	for _, tc := range []struct {
		name, script, out string
		status            int
	}{
		{"bash -i reading stdin: $- has i, each line is recorded and HISTFILE saved at exit",
			"export HOME=/tmp; printf 'echo 1\\n\\n# c\\nif true\\nthen echo 2\\nfi\\necho $-\\nhistory\\n' | bash --norc -i 2>/dev/null; echo st=$?; echo \"$(< /tmp/.bash_history)\"",
			"1\n2\nhiBHs\n    1  echo 1\n    2  # c\n    3  if true; then echo 2; fi\n    4  echo $-\n    5  history\nst=0\necho 1\n# c\nif true; then echo 2; fi\necho $-\nhistory\n", 0},
		{"the rc file runs first; prompts and the lines read go to stderr",
			"export HOME=/tmp; echo 'echo rc; PS1=\"P\\$ \"; PS2=\"more> \"' > $HOME/.bashrc; printf 'echo 1\\nfor i in a\\ndo echo $i; done\\nfalse\\n' | bash -i 2>/tmp/err; echo st=$?; while IFS= read -r l; do case $l in *job*|*terminal*) ;; *) echo \"$l\";; esac; done < /tmp/err",
			"rc\n1\na\nst=1\nP$ echo 1\nP$ for i in a\nmore> do echo $i; done\nP$ false\nP$ exit\n", 0},
		{"the status at the end is the last command's or exit's; a non-interactive bash from stdin has s in $-",
			"export HOME=/tmp; printf 'false\\n' | bash --norc -i 2>/dev/null; echo st=$?; printf 'exit 3\\necho no\\n' | bash --norc -i 2>/dev/null; echo st=$?; echo 'echo $-' | bash; echo \"$(< /tmp/.bash_history)\"",
			"st=1\nst=3\nhBs\nfalse\nexit 3\n", 0},
		{"HISTFILE is loaded (cut to HISTFILESIZE) and saved, cut again",
			"export HOME=/tmp; printf 'a\\nb\\nc\\n' > $HOME/.bash_history; printf 'history\\necho $HISTSIZE $HISTFILESIZE\\n' | HISTFILESIZE=2 bash --norc -i 2>/dev/null; echo \"$(< /tmp/.bash_history)\"",
			"    1  b\n    2  c\n    3  history\n500 2\nhistory\necho $HISTSIZE $HISTFILESIZE\n", 0},
		{"--rcfile with -c: $- has i and c, HISTFILE is set; --norc reads none",
			"export HOME=/tmp; echo 'x=rc' > /tmp/rc; bash --rcfile /tmp/rc -i -c 'echo $x $- ${HISTFILE-unset}' 2>/dev/null; bash --norc -i -c 'echo ${x-none}' 2>/dev/null",
			"rc hiBHc /tmp/.bash_history\nnone\n", 0},
		{"an error that ends a non-interactive shell ends only the line",
			"bash --norc -i -c 'set -u; echo $x; echo no\necho st=$?; : ${y?oops}; echo no\necho st=$?; (echo $x; echo no); echo sub=$?' 2>/dev/null; echo end=$?\n",
			"st=1\nst=1\nsub=1\nend=0\n", 0},
		{"PROMPT_COMMAND (each element of an array) runs before each PS1, $? kept; exit in the rc file ends the shell",
			"export HOME=/tmp; printf 'PROMPT_COMMAND=false\\necho $?\\nPROMPT_COMMAND=(true \"echo two\")\\n\\necho x\\n' | bash --norc -i 2>/dev/null; printf 'echo one\\nexit 42\\necho two\\n' > /tmp/rc; bash --rcfile /tmp/rc -i -c 'echo hello' 2>/dev/null; echo st=$?; echo 'echo no' | bash --rcfile /tmp/rc -i 2>/dev/null; echo st=$?\n",
			"0\ntwo\ntwo\nx\ntwo\none\nst=42\none\nst=42\n", 0},
		{"SHELL is set when unset, bash -i has emacs on, a prompt's \\! is the history number",
			"export HOME=/tmp\nunset SHELL; bash -c 'echo \"$SHELL\"'; bash --norc -i -c 'test -o emacs; echo $?' 2>/dev/null; bash -c 'test -o emacs; echo $?'\nset -o history\nPS1='foo \\! bar'\nhistory -c\necho \"${PS1@P}\"\necho \"_${PS1@P}\"\nprintf 'PS4=\"+\\\\! \"; set -x; true\\n' | PS1='P ' bash --norc -i 2>&1 >/dev/null | while IFS= read -r l; do case $l in *job*|*terminal*) ;; *) echo \"$l\";; esac; done\n",
			"/bin/bash\n0\n1\nfoo 1 bar\n_foo 2 bar\nP PS4=\"+\\! \"; set -x; true\n+1 true\nP exit\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, status := run(t, tc.script)
			if out != tc.out || status != tc.status {
				t.Errorf("%q:\nstdout %q, status %d\nwant   %q, status %d\n(stderr %q)", tc.script, out, status, tc.out, tc.status, errOut)
			}
		})
	}
}
