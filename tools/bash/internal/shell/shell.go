package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/budget"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// Config is everything a script may touch: the interpreter reaches
// nothing else.
type Config struct {
	// FS is the script's file system.
	FS *vfs.FS
	// Env is the initial environment ("name=value"), exported.
	Env []string
	// Stdin, Stdout and Stderr are the script's standard streams (Stdin
	// nil: empty).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Now is the clock ($SECONDS, $EPOCHSECONDS, printf %(...)T, time).
	Now func() time.Time
	// Limits bound the run.
	Limits Limits
	// Budget is the run's memory budget (nil: unlimited).
	Budget *budget.Budget
	// Exec runs a command that is neither a function nor a builtin
	// (tools, utilities). found is false when there is no such command;
	// the shell then reports it (see Suggest).
	Exec func(ctx context.Context, c *Command) (status int, found bool)
	// Kind says what an external command name is, for type and command
	// -v: "tool", "file" (a utility), or "" for none.
	Kind func(name string) string
	// Suggest returns the command a mistyped name probably meant, or "".
	Suggest func(name string) string
	// Names lists the external commands (for compgen -c).
	Names func() []string
	// Name is $0 (default "bash").
	Name string
	// Args are the positional parameters.
	Args []string
	// User and Host are the sandbox's user and host names.
	User, Host string
	// Builtins are commands the embedder adds (help and discover of the
	// bash tool), found before the shell's own builtins.
	Builtins map[string]Builtin
	// Seed seeds $RANDOM and $SRANDOM (bash seeds them from the clock and
	// the process id; here a run with the same Seed draws the same
	// numbers). 0 is a fixed default seed.
	Seed uint64
	// OnStop, if set, is called once when the run stops early (a limit,
	// the memory budget, the deadline, a cancel), before its goroutines
	// have unwound.
	OnStop func(err error)
}

// Builtin is a builtin the embedder adds (help and discover of the bash
// tool): it runs in the shell's process with its streams.
type Builtin func(ctx context.Context, c *Command) int

// Command is a command the shell hands to Config.Exec.
type Command struct {
	Args           []string
	Stdin          io.Reader // nil: nothing (closed)
	Stdout, Stderr io.Writer
	// Dir is the working directory.
	Dir string
	// env makes the command's environment on first use (most commands
	// never look).
	env     func() []string
	envDone bool
	envList []string
	// Exec runs a command line in the shell (xargs, find -exec, timeout):
	// a builtin, function, tool or utility, under the script's limits.
	Exec func(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) int
	// ExecEnv is Exec with exactly environ ("k=v" pairs) as the exported
	// variables the command sees (env -i, env -u, env NAME=VALUE).
	ExecEnv func(ctx context.Context, environ, argv []string, stdin io.Reader, stdout, stderr io.Writer) int
	// Line is the script line of the command, for messages.
	Line int
	// Sleep, when not nil, stands for waiting d: in a background job
	// (which runs to completion where it starts) a sleep advances the
	// job's own time and returns at once.
	Sleep func(d time.Duration)
}

// Environ is the command's environment (exported variables and the
// command's assignments), sorted.
func (c *Command) Environ() []string {
	if !c.envDone {
		c.envDone = true
		if c.env != nil {
			c.envList = c.env()
		}
	}
	return c.envList
}

// Getenv returns a variable of the command's environment.
func (c *Command) Getenv(name string) (string, bool) {
	for _, kv := range c.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// Limits bound one run. Zero fields are unbounded.
type Limits struct {
	MaxCommands            int64
	MaxLoopIterations      int64
	MaxTotalLoopIterations int64
	MaxFunctionDepth       int64
	MaxPipelineStages      int64
	MaxShellDepth          int64 // nested bash -c, source and eval levels
	MaxScriptBytes         int
	MaxASTDepth            int
	// MaxSubstBytes bounds the output one command substitution collects.
	MaxSubstBytes int64
}

// LimitError is a limit the script passed; the run stops at it.
type LimitError struct{ Msg string }

func (e *LimitError) Error() string { return "resource limit exceeded: " + e.Msg }

// RejectedError is a script refused as it is (nested too deep).
type RejectedError struct{ Msg string }

func (e *RejectedError) Error() string { return e.Msg }

// Result is the outcome of a run.
type Result struct {
	Status int
	// Err is why the run stopped early: a *LimitError, a budget error,
	// or the context's error (deadline, cancel).
	Err error
	// SyntaxError is set when the script ended at a syntax error.
	SyntaxError bool
}

// Runner runs one script: its state is shared by the script's shell and
// all its subshells.
type Runner struct {
	cfg    Config
	lim    Limits
	ctx    context.Context
	cancel context.CancelCauseFunc
	budget *budget.Budget

	stopped atomic.Bool
	errMu   sync.Mutex
	err     error

	commands   atomic.Int64
	iterations atomic.Int64
	stages     atomic.Int64
	depth      atomic.Int64 // nested shells
	ids        atomic.Uint32
	pids       atomic.Int64

	start                  time.Time
	umask                  int
	psubFDs                map[int]bool
	ulimitSoft, ulimitHard map[byte]string

	cacheMu   sync.Mutex
	arithMemo map[string]arithNode
	patMemo   map[string]*pattern

	wg sync.WaitGroup // goroutines of pipelines and process substitutions

	// top is the script's shell: $$ (1) and its $BASHPID name it for kill
	top   *shell
	sigMu sync.Mutex
	// procs are the shells that are processes of their own (the
	// script's and each child bash), by their $$, for kill; under sigMu
	procs map[int64]*shell
}

// New returns a Runner for one script.
func New(cfg Config) *Runner {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Name == "" {
		cfg.Name = "bash"
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	r := &Runner{cfg: cfg, lim: cfg.Limits, budget: cfg.Budget,
		arithMemo: map[string]arithNode{}, patMemo: map[string]*pattern{}}
	r.pids.Store(100)
	r.umask = 0o022
	// a utility past the memory budget stops the script, as the shell
	// itself does
	r.budget.OnExceed(r.stop)
	return r
}

// stop ends the run with err (the first one wins).
func (r *Runner) stop(err error) {
	r.errMu.Lock()
	first := r.err == nil
	if first {
		r.err = err
	}
	r.errMu.Unlock()
	if first && r.cfg.OnStop != nil {
		r.cfg.OnStop(err)
	}
	r.stopped.Store(true)
	if r.cancel != nil {
		r.cancel(err)
	}
}

// Err is why the run stopped, nil if it did not.
func (r *Runner) Err() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

// limit stops the run at a passed limit.
func (r *Runner) limit(format string, args ...any) {
	r.stop(&LimitError{Msg: fmt.Sprintf(format, args...)})
	panic(stopPanic{})
}

// Panics that unwind the interpreter.
type (
	// stopPanic: the run stopped (limit, budget, deadline, cancel).
	stopPanic struct{}
	// fatalPanic: an error that ends the current top-level command
	// (exit false) or the shell (exit true), with status.
	fatalPanic struct {
		status int
		exit   bool
	}
	// pipePanic: a builtin wrote to a pipe nobody reads (SIGPIPE).
	pipePanic struct{}
)

// Run runs script (named name in messages) in a fresh shell and returns
// its exit status.
func (r *Runner) Run(ctx context.Context, script string) (res Result) {
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	defer r.cancel(nil)
	stop := context.AfterFunc(r.ctx, func() {
		r.stop(context.Cause(r.ctx))
	})
	defer stop()
	r.start = r.cfg.Now()
	sh := r.newShell()
	status := sh.runMain(script, r.cfg.Name)
	r.wg.Wait()
	res.Status = status
	res.SyntaxError = sh.syntaxError
	if err := r.Err(); err != nil && ctx.Err() == nil || r.stopped.Load() && !errors.Is(r.Err(), context.Canceled) {
		res.Err = r.Err()
	}
	if ctx.Err() != nil {
		res.Err = ctx.Err()
	}
	return res
}

// funcDef is a defined function.
type funcDef struct {
	name string
	body *syntax.Stmt
	src  *source // the source it was parsed from
	line int
	file string // BASH_SOURCE
	ro   bool   // readonly -f
}

// source is a text the shell parsed (the script, a sourced file, eval's
// argument), kept for the printing of functions and arithmetic.
type source struct {
	name string
	text string
	// feed, when not nil, gives the text a line at a time: the script of
	// a shell reading its commands from stdin (text is what was read)
	feed *stdinScript
}

// funcMap holds functions (copy on write, as varMap).
type funcMap struct {
	m    map[string]*funcDef
	refs atomic.Int32
}

func newFuncMap() *funcMap {
	fm := &funcMap{m: map[string]*funcDef{}}
	fm.refs.Store(1)
	return fm
}

// aliasMap holds aliases (copy on write).
type aliasMap struct {
	m    map[string]string
	refs atomic.Int32
}

func newAliasMap() *aliasMap {
	am := &aliasMap{m: map[string]string{}}
	am.refs.Store(1)
	return am
}

// frame is a function call.
type frame struct {
	isSource bool // a sourced file rather than a function
	fn       *funcDef
	params   []string
	callLine int    // the line it was called from
	callFile string // the source it was called from
}

// options are set -o options.
type options struct {
	allexport, errexit, errtrace, functrace, noclobber, noexec, noglob, nounset bool
	pipefail, posix, verbose, xtrace, keyword, braceexpand, hashall, monitor    bool
	emacs, vi, history, histexpand, ignoreeof, interactiveComments, notify      bool
	onecmd, physical, privileged, nolog                                         bool
}

// shopts are shopt options.
type shopts struct {
	extglob, nullglob, failglob, dotglob, globstar, nocaseglob, nocasematch bool
	lastpipe, expandAliases, inheritErrexit, localvarInherit, localvarUnset bool
	xpgEcho, sourcepath, globskipdots, globasciiranges, extquote            bool
	patsubReplacement, shiftVerbose, execfail, assocExpandOnce, extdebug    bool
	other                                                                   map[string]bool
}

// shell is one shell process: the script's, or a subshell (a pipeline
// stage, $(...), (...), a process substitution), or a child shell (bash
// -c). A shell runs in one goroutine.
type shell struct {
	r     *Runner
	id    uint32
	held  int64 // bytes this shell charged to the budget
	level int   // $BASH_SUBSHELL
	pid   int64 // $BASHPID
	// procPid is $$: the pid of the process the shell runs in (its own
	// pid for the script's shell and a child bash, its parent's for a
	// subshell)
	procPid int64

	scopes  []*scope
	frames  []*frame
	funcs   *funcMap
	aliases *aliasMap
	// hist is the history list (history.go), shared with subshells
	// until one changes it
	hist *history
	// histOff > 0 while fc runs a command: bash's parse_and_execute
	// turns the recording of lines off
	histOff int
	// histRemember: the lines read are entered in the history (bash's
	// remember_on_history: set -o history, and on for good once fc has
	// run an edited command)
	histRemember bool
	// defaultPathLookup: command -p looks commands up in defaultPath
	defaultPathLookup bool
	// hash is bash's table of the programs found along $PATH (hash),
	// shared with subshells until one writes it (hashShared).
	hash       *hashTable
	hashShared bool
	opts       options
	shopt      shopts
	fds        *fdTable
	dir        string
	oldDirs    []string // pushd's stack (below the current directory)

	// funcTemps is the scope of the assignments before a function call
	// about to be made (withTemps): callFunc makes it the function's.
	funcTemps *scope
	// byteText: the locale's text is bytes, not UTF-8 (LC_ALL=C):
	// patterns, lengths and offsets count bytes (locale.go)
	byteText bool

	params []string // positional parameters of the top level
	argv0  string

	status     int // $?
	pipestatus []int
	lastArg    string        // $_
	lastBg     int64         // $!
	jobs       []*job        // background jobs not yet waited for
	bgTime     time.Duration // the time background jobs took, one after the other

	// control flow pending after a command: break/continue n levels,
	// return, exit.
	flow      flowKind
	flowN     int
	loopDepth int
	// noErrexit > 0 where errexit is ignored (conditions, && lists, !).
	noErrexit int
	// condDepth > 0 inside conditions and && || lists (not !): there
	// set -e does not take effect (bash's builtin_ignoring_errexit)
	condDepth int

	traps       map[string]string
	parentTraps map[string]string // shown by trap in a subshell
	inTrap      string
	inDebugTrap bool // the DEBUG trap's handler is running (it does not nest)
	// aliasTails collects, while aliasHeredocRestart expands a line, the
	// aliases holding a here-document
	aliasTails *[]aliasHeredoc
	// asyncCmd is the command of the background job this shell runs
	// (see background)
	asyncCmd syntax.Command
	// braceQuoteChars: a character range of the word being expanded
	// made \ or ` (see rescanBraceWord)
	braceQuoteChars bool
	errTrapping     bool

	src         *source // the source being run
	line        int     // $LINENO
	syntaxError bool
	isSubst     bool // a command substitution's shell
	child       bool // a child shell (bash -c) rather than a subshell
	sourceDepth int
	getoptsPos  int // position inside a bundle of short options (getopts)

	randSeed   uint32
	lastRandom int

	// signals sent to this shell (kill $$, kill $BASHPID), handled after
	// the command that is running (takeSignals); sigAny (atomic) says
	// sigPending (under Runner.sigMu) is not empty
	sigPending []int
	sigAny     int32

	// circularRef is set when resolve met a circular nameref (an
	// assignment through it then fails, as in bash)
	circularRef bool
	// dashC: the shell runs a -c string ($- has c); fileScript: a script
	// file (FUNCNAME ends with main, BASH_SOURCE names it).
	dashC bool
	// interactive: bash -i ($- has i); readStdin: the commands come
	// from stdin ($- has s)
	interactive, readStdin bool
	// shellName is how an interactive shell was invoked (bash, sh): its
	// messages say it rather than $0
	shellName string
	// inPS1: PS1 is being expanded (its \! is the next entry's number)
	inPS1      bool
	fileScript bool
	secBase    time.Time
	secOff     int64

	funcDepth int
	evalDepth int
	lastCmd   string // $BASH_COMMAND

	// substStatus is the status of the last command substitution of the
	// current command (-1: none), the status of an assignment.
	substStatus int
	// psubList are the process substitutions of the current command.
	psubList  []*psub
	ifsCache  *ifsSplit
	compSpecs map[string]*compSpec
	execArgv0 string // exec -a NAME
	// keptFDs are the {var}> descriptors of the redirections being made.
	keptFDs []int
	// movedFDs are the descriptors the redirections being made moved
	// (n>&m-: m), see closeMoved.
	movedFDs []int
	// envOverride, when not nil, is the whole environment of the
	// commands this shell runs (env -i, env -u): set only in the child
	// that runs env's command.
	envOverride []string
	// execBy is the utility (env, xargs, ...) whose command this
	// subshell runs, which reports a command not found in its words
	execBy string
	// bgSlept, in a background job and its subshells, is the time the
	// job slept (nanoseconds): sleep there does not wait (see Sleep)
	bgSlept *atomic.Int64
	// stdinRedir counts the compound commands running with fd 0
	// redirected: a background job started inside keeps that stdin
	stdinRedir int
	// killed: the shell ends by SIGKILL, which runs no EXIT trap.
	killed bool
}

type flowKind uint8

const (
	flowNone flowKind = iota
	flowBreak
	flowContinue
	flowReturn
	flowExit
)

// newShell makes the script's shell.
func (r *Runner) newShell() *shell {
	sh := &shell{
		r:       r,
		id:      r.ids.Add(1),
		pid:     r.pids.Add(1),
		funcs:   newFuncMap(),
		aliases: newAliasMap(),
		dir:     vfs.WorkspaceDir,
		params:  r.cfg.Args,
		argv0:   r.cfg.Name,
		traps:   map[string]string{},
		secBase: r.start,
	}
	sh.randSeed = uint32(r.cfg.Seed) ^ uint32(r.cfg.Seed>>32)
	sh.procPid = sh.pid
	if r.top == nil {
		r.top = sh
	}
	r.addProc(sh)
	if sh.randSeed == 0 {
		sh.randSeed = 1
	}
	sh.dashC = true
	sh.opts.braceexpand, sh.opts.hashall, sh.opts.interactiveComments = true, true, true
	sh.shopt = defaultShopts()
	sh.fds = newFDTable(r.cfg.Stdin, r.cfg.Stdout, r.cfg.Stderr)
	sh.scopes = []*scope{{kind: scopeGlobal, vm: newVarMap(64)}}
	sh.initVars(r.cfg.Env)
	sh.initLocale()
	return sh
}

// addProc records a shell that is a process of its own, which kill
// finds by its $$.
func (r *Runner) addProc(sh *shell) {
	r.sigMu.Lock()
	defer r.sigMu.Unlock()
	if r.procs == nil {
		r.procs = map[int64]*shell{}
	}
	r.procs[sh.procPid] = sh
}

// dropProc forgets a process that has ended.
func (r *Runner) dropProc(sh *shell) {
	r.sigMu.Lock()
	defer r.sigMu.Unlock()
	delete(r.procs, sh.procPid)
}

// proc returns the live process shell whose $$ is pid.
func (r *Runner) proc(pid int64) *shell {
	r.sigMu.Lock()
	defer r.sigMu.Unlock()
	return r.procs[pid]
}

func defaultShopts() shopts {
	return shopts{sourcepath: true, globskipdots: true, globasciiranges: true, extquote: true,
		patsubReplacement: true, other: map[string]bool{
			"checkwinsize": true, "cmdhist": true, "complete_fullquote": true, "force_fignore": true,
			"hostcomplete": true, "interactive_comments": true, "progcomp": true, "promptvars": true,
		}}
}

// initVars sets the shell's own variables and the environment.
func (sh *shell) initVars(env []string) {
	m := sh.scopes[0].vm.m
	set := func(name, val string, a attr) {
		m[name] = &variable{set: true, str: val, attrs: a, owner: sh.id}
	}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validName(k) {
			continue
		}
		set(k, v, aExport)
	}
	if _, ok := m["OLDPWD"]; !ok {
		m["OLDPWD"] = &variable{attrs: aExport, owner: sh.id}
	}
	if _, ok := m["PWD"]; !ok {
		set("PWD", sh.dir, aExport)
	} else {
		m["PWD"].str = sh.dir
	}
	set("IFS", " \t\n", 0)
	def := func(name, val string, a attr) {
		// a variable the environment does not give
		if _, ok := m[name]; !ok {
			set(name, val, a)
		}
	}
	def("PS4", "+ ", 0)
	set("OPTIND", "1", aInteger)
	set("OPTERR", "1", 0)
	set("BASH", "/bin/bash", 0)
	set("BASH_VERSION", "5.2.15(1)-release", 0)
	m["BASH_VERSINFO"] = &variable{set: true, attrs: aIndexed | aReadonly, owner: sh.id, arr: &indexed{elems: []element{
		{0, "5"}, {1, "2"}, {2, "15"}, {3, "1"}, {4, "release"}, {5, "x86_64-pc-linux-gnu"}}}}
	def("HOSTTYPE", "x86_64", 0)
	def("MACHTYPE", "x86_64-pc-linux-gnu", 0)
	def("OSTYPE", "linux-gnu", 0)
	if sh.r.cfg.Host != "" {
		def("HOSTNAME", sh.r.cfg.Host, 0)
	}
	if v, ok := m["UID"]; ok {
		v.attrs = aInteger | aReadonly | v.attrs&aExport
	}
	if v, ok := m["EUID"]; ok {
		v.attrs = aInteger | aReadonly | v.attrs&aExport
	}
	set("PPID", "0", aInteger|aReadonly)
	if v, ok := m["SHLVL"]; ok {
		n, _ := strconv.Atoi(v.str)
		v.str = strconv.Itoa(n + 1)
	} else {
		set("SHLVL", "1", aExport)
	}
	imported := map[string]string{}
	for _, name := range []string{"RANDOM", "SECONDS", "LINENO", "BASHPID", "BASH_SUBSHELL", "EPOCHSECONDS",
		"EPOCHREALTIME", "SRANDOM", "FUNCNAME", "BASH_SOURCE", "BASH_LINENO", "BASH_ARGC", "BASH_ARGV",
		"BASH_COMMAND", "DIRSTACK", "SHELLOPTS", "BASHOPTS", "GROUPS", "HISTCMD", "BASH_ALIASES", "BASH_CMDS",
		"PIPESTATUS"} {
		a := aDynamic
		switch name {
		case "RANDOM", "SECONDS", "BASHPID", "SRANDOM", "HISTCMD":
			a |= aInteger
		case "FUNCNAME", "BASH_SOURCE", "BASH_LINENO", "BASH_ARGC", "BASH_ARGV", "DIRSTACK", "GROUPS",
			"PIPESTATUS":
			a |= aIndexed
		case "BASH_ALIASES", "BASH_CMDS":
			a |= aAssoc
		case "SHELLOPTS", "BASHOPTS":
			a |= aReadonly
			if old, ok := m[name]; ok && old.attrs&aExport != 0 {
				// from the environment: the options it lists are set
				// (as bash does at start-up), and it stays exported
				a |= aExport
				imported[name] = old.str
			}
		}
		m[name] = &variable{attrs: a, set: true, owner: sh.id}
	}
	if v, ok := imported["SHELLOPTS"]; ok {
		for _, o := range strings.Split(v, ":") {
			if o != "" {
				builtinSet(sh, []string{"set", "-o", o})
			}
		}
	}
	if v, ok := imported["BASHOPTS"]; ok {
		for _, o := range strings.Split(v, ":") {
			if o != "" {
				sh.setShopt(o, true)
			}
		}
	}
}

// fork makes a subshell of sh: a copy of its variables, functions,
// options, file descriptors and directory, which it shares until either
// writes.
func (sh *shell) fork() *shell {
	c := &shell{}
	*c = *sh
	c.id = sh.r.ids.Add(1)
	c.pid = sh.r.pids.Add(1)
	c.sigPending, c.sigAny = nil, 0
	c.held = 0
	c.level = sh.level + 1
	c.scopes = make([]*scope, len(sh.scopes))
	for i, sc := range sh.scopes {
		c.scopes[i] = sc.share()
	}
	c.frames = append([]*frame(nil), sh.frames...)
	sh.funcs.refs.Add(1)
	sh.aliases.refs.Add(1)
	c.fds = sh.fds.clone()
	c.oldDirs = append([]string(nil), sh.oldDirs...)
	sh.histFork()
	if sh.hash != nil {
		sh.hashShared, c.hashShared = true, true
	}
	c.pipestatus = append([]int(nil), sh.pipestatus...)
	c.flow, c.flowN = flowNone, 0
	c.loopDepth = 0 // break and continue do not leave a subshell
	c.psubList = nil
	// Traps are reset in a subshell; trap with no arguments still shows
	// the parent's.
	c.parentTraps = sh.traps
	if len(sh.parentTraps) > 0 && len(sh.traps) == 0 {
		c.parentTraps = sh.parentTraps
	}
	c.traps = map[string]string{}
	for k, v := range sh.traps {
		if v == "" || k == "ERR" && sh.opts.errtrace || (k == "DEBUG" || k == "RETURN") && sh.opts.functrace {
			// ignored signals stay ignored; set -E keeps ERR, set -T
			// DEBUG and RETURN
			c.traps[k] = v
		}
	}
	c.jobs = append([]*job(nil), sh.jobs...)
	c.bgTime = 0
	c.isSubst = false
	c.envOverride = nil
	c.execBy = ""
	c.killed = false
	c.child = false
	c.randSeed = sh.randSeed ^ uint32(c.pid)*2654435761
	return c
}

// release gives back what a finished subshell held.
func (sh *shell) release() {
	for _, sc := range sh.scopes {
		sc.drop()
	}
	sh.funcs.refs.Add(-1)
	sh.aliases.refs.Add(-1)
	sh.fds.closeAll()
	sh.r.budget.Release(sh.held)
	sh.held = 0
}

// funcsWritable returns the function map for writing.
func (sh *shell) funcsWritable() map[string]*funcDef {
	if sh.funcs.refs.Load() == 1 {
		return sh.funcs.m
	}
	nm := newFuncMap()
	for k, v := range sh.funcs.m {
		nm.m[k] = v
	}
	old := sh.funcs
	sh.funcs = nm
	old.refs.Add(-1)
	return nm.m
}

// aliasesWritable returns the alias map for writing.
func (sh *shell) aliasesWritable() map[string]string {
	if sh.aliases.refs.Load() == 1 {
		return sh.aliases.m
	}
	nm := newAliasMap()
	for k, v := range sh.aliases.m {
		nm.m[k] = v
	}
	old := sh.aliases
	sh.aliases = nm
	old.refs.Add(-1)
	return nm.m
}

// check stops the goroutine when the run has stopped. The context is
// read here too: the AfterFunc that stops the run at the deadline runs in
// a goroutine of its own, and until it is scheduled a loop of commands
// that return at once on a done context (a tool call) would spin, each
// command traced, as many times as the scheduler lets it.
func (sh *shell) check() {
	if sh.r.stopped.Load() {
		panic(stopPanic{})
	}
	if sh.r.ctx.Err() != nil {
		sh.r.stop(context.Cause(sh.r.ctx))
		panic(stopPanic{})
	}
}

// errorf prints "bash: line N: msg" on stderr.
func (sh *shell) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	sh.writeErr(sh.errPrefix() + msg + "\n")
}

// usageLine writes a builtin's usage line ("read: usage: read [-ers]
// ..."), which bash prints without the prefix of other messages.
func (sh *shell) usageLine(format string, args ...any) {
	sh.writeErr(fmt.Sprintf(format, args...) + "\n")
}

// errPrefix is bash's prefix of an error message: "bash: line N: ".
func (sh *shell) errPrefix() string {
	name := sh.argv0
	if sh.src != nil && sh.src.name != "" && sh.sourceDepth > 0 {
		name = sh.src.name
	}
	if sh.interactive && sh.sourceDepth == 0 {
		// an interactive shell's own commands: its name, no line
		if sh.shellName != "" {
			name = sh.shellName
		}
		return name + ": "
	}
	if sh.line > 0 {
		return name + ": line " + strconv.Itoa(sh.line) + ": "
	}
	return name + ": "
}

// writeErr writes to the shell's stderr (fd 2), ignoring failures.
func (sh *shell) writeErr(s string) {
	if f := sh.fds.get(2); f != nil && f.w != nil {
		io.WriteString(f.w, s)
	}
}

// fatal reports err and unwinds: an assignment or arithmetic error ends
// the current top-level command with status 1, as in bash.
func (sh *shell) fatal(err error) {
	var ae *arithError
	var as *assignError
	switch {
	case errors.As(err, &ae):
		sh.errorf("%s", ae.Error())
		if ae.subscript {
			panic(fatalPanic{status: 1, exit: true})
		}
	case errors.As(err, &as) && sh.opts.posix:
		// POSIX: an assignment error ends a non-interactive shell
		sh.errorf("%s", err.Error())
		panic(fatalPanic{status: 127, exit: true})
	default:
		sh.errorf("%s", err.Error())
	}
	panic(fatalPanic{status: 1})
}

// exitFatal reports msg and ends the shell: an unset variable with set
// -u, ${x?}. A subshell exits 1, the script's shell 127.
func (sh *shell) exitFatal(msg string) {
	sh.errorf("%s", msg)
	status := 127
	if sh.level > 0 || sh.isSubst || sh.opts.errexit || sh.interactive {
		status = 1
	}
	panic(fatalPanic{status: status, exit: true})
}

// now is the sandbox's clock.
func (sh *shell) now() time.Time { return sh.r.cfg.Now() }
