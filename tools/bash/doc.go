// Package bash is the bash tool: it runs bash scripts in a sandbox where
// every registered tool is a command, so that a model can orchestrate many
// tools — with pipes, variables, loops, conditionals and jq — in one tool
// call.
//
// A [Builder] registers tools ([ToolDef] plus a [ToolCallback] or a
// [PositionalCallback]) and configuration (environment, [Limits], clock,
// error sanitizing) and builds a [Tool], which implements the tools.Tool
// contract. Each run gets a fresh shell of the sandbox's own interpreter
// (package internal/shell) and, unless the caller gives one, a fresh file
// system (package vfs); the callbacks are shared between runs.
//
// In a world, scripted.run is the effect that runs the bash tool
// (sys/scripted.run@1, cap sys/scripted@1), carried out by package
// adapters/bashfx. Those names are journaled and shared with AgentOS, so
// they keep the word "scripted"; the tool, its package and its demo
// (examples/bash) are called bash.
//
// Inside a script, a tool is called as `name --key value --flag=value`;
// flags are coerced by the tool's JSON Schema and validated before the
// callback runs (a boolean also takes `--flag true|false`, and `--a-b`
// names the property a_b when the schema has no a-b). `help`, `discover`,
// `<tool> --help` and `<tool> --dry-run` describe the tools, and
// in-process utilities process their output and files: awk (a POSIX awk
// of our own), jq (gojq; objects keep jq's key order: the input's, the
// filter's for {b, a}, left then right's new keys for + and *, an
// update's (new keys last), and .[], to_entries, keys_unsorted, add, ..,
// paths, tostream, tojson, fromjson, match, capture, INDEX and "\(.)"
// follow it; what still differs: objects gojq's own builtins build (env, fromstream) print in
// the order of the first object with the same keys, else the input's
// first order of their keys, else sorted, and so does an update changing
// more than one value of an object when an earlier object has the same
// keys in another order, or past the bounded number of orders noted),
// grep, sed, sort, find, ls, cp, mv, rm, diff, bc,
// tar and some seventy more (see the SystemPrompt of [Tool.Info]).
//
// # The interpreter
//
// The shell is our own: mvdan.cc/sh/v3's parser reads the script (its
// syntax package only; the semantics are the interpreter's), and package
// internal/shell runs it as bash 5.2 does, measured against real bash on
// the Oils project's spec tests (TestOilsSpec), GNU bash's own test
// scripts (TestBashTests, when DEMIURGE_BASH_TESTS names them) and the
// corpus of model-style scripts (TestCorpus). It runs a script a line at a time, as
// bash -c does: a line's commands run before the next line is parsed, a
// syntax error ends the script where bash's would (exit 2), and aliases
// defined on one line apply from the next. What it supports:
//
//   - word expansion: braces, tildes (~root is /root and ~user
//     $HOME: the sandbox has those two users), every parameter operator (${x:-w},
//     ${x#p}, ${x/p/r}, ${x^^}, ${x:o:l}, ${!x}, ${!p*}, ${x@Q} and the
//     other transformations), command and arithmetic substitution, IFS
//     splitting as bash does it (empty fields, non-blank IFS, "$@"),
//     globs with extglob, globstar, nullglob, failglob, dotglob and
//     GLOBIGNORE, quote removal;
//   - arithmetic parsed from its expanded text, so that a variable
//     holding "1 + 2" is an expression, with bash's error messages;
//   - indexed (sparse) and associative arrays, the latter listing their
//     keys in the order of bash's own hash table;
//   - declare/local/typeset/export/readonly with -a -A -i -l -u -n -r -x
//     -g and bash's -p output, namerefs (to elements too);
//   - descriptors: exec 3>f, {v}>f, n<&m, n>&m-, <>, read -u, here-docs
//     and here-strings, process substitution both ways (/dev/fd/N,
//     readable by the utilities too), noclobber and >|;
//   - pipelines whose stages are subshells (shopt -s lastpipe runs the
//     last in the shell), PIPESTATUS, pipefail, subshells, $(...);
//   - set -e with bash's exemptions, -u, -x (PS4), -f, -C, -a, -E, -T;
//     traps EXIT (in every shell level), ERR, RETURN, DEBUG;
//   - functions with dynamic scoping, FUNCNAME, BASH_SOURCE, BASH_LINENO,
//     LINENO, caller, RANDOM and SRANDOM (bash's generator, seeded by
//     RunOptions.Seed: a world passes one derived from the call's intent,
//     so a replay draws the same numbers; shuf draws from the same seed),
//     SECONDS and EPOCHSECONDS from the sandbox's clock;
//   - builtins: the whole of bash's but the interactive ones (below),
//     among them read and mapfile with all their flags, printf with -v
//     and %(fmt)T, getopts, shopt, set -o, pushd/popd/dirs, type,
//     command, hash, source and ., eval, exec CMD, alias, time, ulimit
//     and umask (reported, not enforced), complete/compgen/compopt;
//   - background jobs run to completion where they start, one after
//     the other (deterministic output), $! and wait report them; a
//     sleep in a job takes no time there but makes the job end later
//     on the script's clock: jobs shows it Running until then, kill
//     ends it (status 128+n) and wait waits until then;
//   - bash and sh run child shells (bash -c, bash FILE, a script named
//     by path), each a process of its own ($$, $BASHPID; $PPID is the
//     parent's $$), and a script of the workspace on $PATH runs by its
//     name; env, xargs, timeout, find -exec and time run only programs
//     (utilities, tools, scripts, and the builtins that are programs
//     too), not functions, as their execvp does.
//
// Where bash's parser and mvdan's differ, the interpreter rewrites the
// text around a parse error into what bash meant, when it can: "((" that
// opens two subshells, arithmetic bash checks only when it runs it, a
// subscript with blanks (a[1 + 2]= cmd, a[5 + 3] as a command's name),
// an array assignment before a command (refused when it runs, as bash
// does), [k]+=v in an array literal, and `...` that mvdan reads otherwise
// than bash (a quote left open, backslashes inside double quotes). An
// alias holding a here-document takes the body from the script's next
// lines, as bash's reader does, not from the alias.
//
// What it refuses, and why: coprocesses (a second process to talk to;
// nothing runs beside the script), job control (fg, bg, suspend, kill of
// a running job: jobs have ended when they are waited for), history
// expansion and line editing (bind; no terminal), and signals from
// outside (nothing else can send one to the sandbox: kill $$, kill
// $BASHPID and kill from a child bash reach the script's own shells,
// whose traps run after the running command, and whose default action
// ends the shell with 128+n). ulimit and umask
// report values and remember what is set; the run's own limits are what
// bound it.
//
// History is a non-interactive bash's: a list that starts empty and that
// history (-c, -d N and ranges, -r, -w, -a, -n, -s, -p, N) and fc (-l, -n,
// -r, -s, -e) work on, kept in the sandbox's files through HISTFILE
// ($HOME/.history when it is unset), stifled by HISTSIZE, its file cut by
// an assignment of HISTFILESIZE, timed under HISTTIMEFORMAT, its bytes
// charged to the memory budget. fc's editor is a command of the sandbox
// run on a file under /tmp. Under set -o history (and, as in bash, for
// good once fc -e has run) the script's lines are entered as bash's
// command-oriented history joins them (HISTCONTROL and HISTIGNORE are
// not applied); set -o history before any line is entered first loads
// the history as bash's load_history (HISTSIZE and HISTFILESIZE default
// to 500, the file is cut and read), and a shell that exits with its
// lines recorded saves them to $HISTFILE as bash does (the session's
// lines appended, or the list written over the file when HISTSIZE cut
// it and histappend is off; then cut to HISTFILESIZE). bash -i reading
// its commands from stdin runs as bash 5.2 does when stdin is not a
// terminal: $- has i, the rc file (~/.bashrc, --rcfile F, none under
// --norc) runs first, HISTFILE (~/.bash_history) is loaded, each line
// read is written to stderr after its prompt (PS1, PS2; PROMPT_COMMAND
// runs before PS1) and entered in the history, an error that would end
// the shell (set -u) ends only the line, and at the end "exit" goes to
// stderr and the history is saved; its messages name the shell, with no
// line number, and aliases expand. bash -i FILE is interactive too, its
// commands read from FILE. It has no line editing, job control or history
// expansion. A bash reading its script from stdin (bash < f, cmd | bash,
// interactive or not) reads it a line at a time from whatever fd 0 is,
// as bash does: a command that reads stdin reads the script's next lines,
// and exec 0<g goes on with g's commands.
//
// # Sandbox
//
// Nothing of the host is reachable from a script: no process is started,
// no host file is opened, read, listed or checked, no host environment
// variable is visible (the environment is the Builder's and a few the
// sandbox sets: HOME, USER, SHELL, PATH, UID), and there is no network. The
// script's file system is package vfs: /workspace, its working directory
// (empty, or a caller's workspace through [RunOptions].FS), /tmp scratch
// space and /dev; paths never leave it. A caller whose tools change that
// workspace too applies their changes to the same files (vfs.FS.Set), so
// that the script sees one workspace: adapters/bashfx does so for the
// workspace_* commands. Tools come before functions of the same name: a
// script cannot shadow one.
//
// # Limits
//
// [Limits] bound every run: commands (each simple command, builtins and
// functions included), loop iterations (one loop's and all), function
// depth, concurrent pipeline stages, nested shells, tool calls, output
// (kept up to the bound, the rest counted), a command substitution's
// output, the file system's size, wall time, and memory. The memory
// budget (MaxMemoryBytes) is charged by every variable, array element,
// large expansion and command substitution, and by the utilities that
// buffer (sort, sed, awk, jq, diff, tac, ...): past it the script ends
// with "resource limit exceeded: memory budget exceeded (N bytes)". A
// builtin that writes to a pipe nobody reads ends its subshell as
// SIGPIPE would (status 141). When a limit or the deadline stops a run,
// every loop, pipe and utility sees it within milliseconds
// (BenchmarkTimeLimit), and what commands still write as they unwind is
// dropped.
//
// # Exit status
//
// The script's own status, as bash's; and 1 a failed callback (its message
// replaced by "<tool>: callback failed" unless SanitizeErrors(false)) or
// an exceeded resource limit ("resource limit exceeded: ..."); 2 a flag,
// schema or syntax error, or a rejected script; 124 the time limit; 127 an
// unknown command, reported as bash does ("bash: line N: x: command not
// found") with the closest command's name when it looks like a typo of
// it.
//
// # Caveats
//
// A callback that ignores its context keeps running (in its goroutine)
// after Run returns; Run itself returns on time. Stages of a pipeline run
// concurrently, so the calls they make are traced in the order they
// started. The sandbox has one user: ~user is left as it is. Its installed
// locales are C, POSIX and C.UTF-8: LC_ALL=C (or LC_CTYPE, LANG) makes
// lengths, offsets and patterns count bytes as in bash, another locale
// is refused with bash's warning, and with none of these variables set
// text is UTF-8 (bash would read bytes). Output is streamed
// (Run's status) a line at a time.
package bash
