package shell

import (
	"strings"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// An interactive child shell (bash -i) reading its commands from stdin
// that is not a terminal, as bash 5.2 runs one: $- has i (and H, s), the
// rc file (~/.bashrc, --rcfile F; none under --norc) runs first, then
// HISTFILE (~/.bash_history) is loaded; each line read is echoed to
// stderr after its prompt (PS1, PS2 for a command's further lines) and
// entered in the history; at the end "exit" is written to stderr and the
// history saved to HISTFILE, cut to HISTFILESIZE lines. There is no
// terminal: no line editing, job control or history expansion.

// interactiveStart is how bash -i was started.
type interactiveStart struct {
	name   string // bash or sh, how the shell was invoked
	norc   bool
	rcfile string // --rcfile F ("": ~/.bashrc)
	stdin  bool   // the commands are read from stdin (not -c)
	// interactive: -i (else only stdin is said, for $-)
	interactive bool
}

// startInteractive runs the rc file and loads the history, as bash does
// before it reads the first command.
func (sh *shell) startInteractive(ia *interactiveStart) {
	sh.interactive = true
	sh.opts.histexpand, sh.opts.emacs = true, true
	sh.shopt.expandAliases = true
	sh.shellName = ia.name
	sh.readStdin = ia.stdin
	if _, ok := sh.varValue("PS1"); !ok {
		sh.setString("PS1", `\s-\v\$ `, false)
	}
	if _, ok := sh.varValue("PS2"); !ok {
		sh.setString("PS2", "> ", false)
	}
	home, _ := sh.varValue("HOME")
	home = strings.TrimSuffix(home, "/")
	if !ia.norc {
		rc := ia.rcfile
		if rc == "" {
			rc = home + "/.bashrc"
		}
		if _, err := sh.r.cfg.FS.Stat(sh.r.ctx, vfs.Abs(sh.dir, rc)); err == nil {
			builtinSource(sh, []string{".", rc})
			if sh.flow == flowExit {
				// exit in the rc file ends the shell
				return
			}
			sh.flow = flowNone
		}
	}
	// bash's load_history (the file is read only when commands come from
	// stdin; with -c the sizes are set and the file cut, no more)
	if _, ok := sh.varValue("HISTFILE"); !ok {
		sh.setString("HISTFILE", home+"/.bash_history", false)
	}
	if !ia.stdin {
		sh.histDefaults()
		return
	}
	sh.historyOption(true)
}

// endInteractive is bash's end of an interactive shell: "exit" on
// stderr and the history saved (maybe_save_shell_history).
func (sh *shell) endInteractive(eof bool) {
	if eof {
		sh.promptCommand()
		sh.flow = flowNone
		sh.writeErr(sh.prompt("PS1"))
	}
	sh.writeErr("exit\n")
	sh.saveHistory()
}

// prompt is the expansion of a prompt variable (PS1, PS2).
func (sh *shell) prompt(name string) string {
	v, ok := sh.varValue(name)
	if !ok || v == "" {
		return ""
	}
	sh.inPS1 = name == "PS1"
	defer func() { sh.inPS1 = false }()
	return sh.expandPS4(v)
}

// promptHistNumber is a prompt's \! (bash's prompt_history_number),
// while the history is on: for PS1 the number the next entry gets, for
// the others (${x@P}, PS4) one less, the line being run having been
// entered already.
func (sh *shell) promptHistNumber() int {
	if !sh.histRemember || sh.hist == nil {
		return 1
	}
	n := sh.hist.base + len(sh.hist.entries)
	if n == 1 || sh.inPS1 {
		return n
	}
	return n - 1
}

// echoLines writes the lines of text from offset from up to offset to
// (the lines a command was read from) to stderr, each after its prompt:
// PS1 before a command's first line and a blank or comment line before
// it, PS2 before its further lines.
func (sh *shell) echoLines(text string, from, start, to int) {
	if from >= to || from >= len(text) {
		return
	}
	to = min(to, len(text))
	first := strings.LastIndexByte(text[:min(start, len(text))], '\n') + 1
	if first < from {
		first = from
	}
	for off := from; off < to; {
		end := strings.IndexByte(text[off:to], '\n')
		line := text[off:to]
		next := to
		if end >= 0 {
			line, next = text[off:off+end], off+end+1
		}
		name := "PS1"
		if off > first {
			name = "PS2"
		} else {
			sh.promptCommand()
			if sh.flow != flowNone {
				return
			}
		}
		sh.writeErr(sh.prompt(name) + unescapeRaw(line) + "\n")
		off = next
	}
}

// histLineEnd is the offset after the line where a command that ends at
// offset end ends.
func histLineEnd(text string, end int) int {
	if end >= len(text) {
		return len(text)
	}
	if nl := strings.IndexByte(text[end:], '\n'); nl >= 0 {
		return end + nl + 1
	}
	return len(text)
}

// promptCommand runs PROMPT_COMMAND (each element of an array) before
// PS1 is written, as bash does; $? is kept, and the commands are not
// entered in the history.
func (sh *shell) promptCommand() {
	if _, ok := sh.varValue("PROMPT_COMMAND"); !ok {
		if rv, _ := sh.lookup("PROMPT_COMMAND"); rv == nil {
			return
		}
	}
	pv := sh.byName("PROMPT_COMMAND[@]")
	cmds := pv.list
	if !pv.isList {
		cmds = []string{pv.s}
	}
	status := sh.status
	sh.histOff++
	defer func() {
		sh.histOff--
		if sh.flow == flowNone {
			sh.status = status
		}
	}()
	for _, c := range cmds {
		if c == "" {
			continue
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					if _, ok := p.(fatalPanic); !ok {
						panic(p)
					}
				}
			}()
			builtinEval(sh, []string{"eval", "--", c})
		}()
		if sh.flow != flowNone {
			return
		}
	}
}
