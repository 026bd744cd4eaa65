// Package coreutils implements the utilities of the bash tool's
// sandbox (printf, jq, awk, grep, sed, sort, ls, find, cp, ...) as
// in-process commands.
//
// A command touches only what its Env gives it: its standard streams, the
// sandbox's file system (package vfs; paths are resolved against Env.Dir)
// and environment. There is no host process, file or variable. Without a
// file system (Env.FS nil) file operands other than "-" are refused with
// "<cmd>: <file>: filesystem access disabled". Commands check ctx while
// they work, and stop with exit status 1 once it is done; they never panic
// on input. "<cmd> --version" and "<cmd> --help" answer as scripts probe
// them (the usages are one table, help.go; the bash tool's "help <cmd>"
// prints the same).
package coreutils

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/budget"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// Env is what a command may touch while it runs.
type Env struct {
	// Stdin is the command's standard input; never nil (an empty reader
	// when nothing is attached).
	Stdin io.Reader
	// Stdout and Stderr receive the command's output; never nil.
	Stdout io.Writer
	Stderr io.Writer
	// Getenv returns a variable of the sandbox environment ("" when unset).
	Getenv func(name string) string
	// Environ lists the sandbox's exported variables as "k=v" pairs; jq's
	// $ENV reads it.
	Environ func() []string
	// Now is the sandbox's clock, read by date.
	Now func() time.Time
	// Sleep, when not nil, is what sleep does instead of waiting: the
	// shell runs a background job to completion where it starts, and
	// the job's sleeps advance its own time rather than the script's.
	Sleep func(d time.Duration)
	// MaxInputBytes bounds what a command reads from Stdin; a command that
	// would read more fails with "<cmd>: input exceeds N bytes". 0 means no
	// bound.
	MaxInputBytes int64
	// MaxOutputBytes bounds what a command writes to Stdout; a command that
	// writes more is stopped and fails with "<cmd>: output exceeds N
	// bytes" (generators such as seq or jq's range would otherwise fill
	// memory inside $(...)). 0 means no bound.
	MaxOutputBytes int64
	// Exec runs a command line inside the sandbox (xargs uses it) and
	// returns its exit status. nil disables xargs.
	Exec func(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) int
	// ExecEnv is Exec with environ ("k=v" pairs) as the command's whole
	// environment (env -i, -u, NAME=VALUE); nil refuses those forms.
	ExecEnv func(ctx context.Context, environ, argv []string, stdin io.Reader, stdout, stderr io.Writer) int
	// JQ caches compiled jq filters across runs; nil means no cache.
	JQ *JQCache
	// FS is the sandbox's file system; nil refuses file operands.
	FS *vfs.FS
	// Dir is the working directory relative paths are resolved against
	// (absolute; "" is "/").
	Dir string
	// Random is the sandbox's entropy source, read by shuf for its seed:
	// a deterministic stream, so that a recorded run repeats. nil means a
	// fixed seed. Never the host's randomness.
	Random io.Reader
	// User and Host are what whoami and hostname print.
	User, Host string
	// Budget is the script's memory budget: a command charges what it
	// buffers (package budget); nil is unlimited.
	Budget *budget.Budget
}

// Func is a command: it runs args (without the command name) and returns
// its exit status.
type Func func(ctx context.Context, env *Env, args []string) int

// impl is a command's implementation; run wraps it into a Func.
type impl func(c *cmd, args []string) int

var commands map[string]impl

func init() {
	commands = map[string]impl{
		"base64":    base64Cmd,
		"basename":  basenameCmd,
		"cat":       catCmd,
		"cut":       cutCmd,
		"date":      dateCmd,
		"dirname":   dirnameCmd,
		"grep":      grepCmd,
		"head":      headCmd,
		"jq":        jqCmd,
		"printf":    printfCmd,
		"sed":       sedCmd,
		"seq":       seqCmd,
		"sort":      sortCmd,
		"tail":      tailCmd,
		"tee":       teeCmd,
		"tr":        trCmd,
		"uniq":      uniqCmd,
		"wc":        wcCmd,
		"xargs":     xargsCmd,
		"ls":        lsCmd,
		"mkdir":     mkdirCmd,
		"rmdir":     rmdirCmd,
		"rm":        rmCmd,
		"mv":        mvCmd,
		"cp":        cpCmd,
		"touch":     touchCmd,
		"chmod":     chmodCmd,
		"ln":        lnCmd,
		"realpath":  realpathCmd,
		"readlink":  readlinkCmd,
		"mktemp":    mktempCmd,
		"stat":      statCmd,
		"du":        duCmd,
		"find":      findCmd,
		"sleep":     sleepCmd,
		"timeout":   timeoutCmd,
		"time":      timeCmd,
		"yes":       yesCmd,
		"whoami":    whoamiCmd,
		"tty":       ttyCmd,
		"hostname":  hostnameCmd,
		"id":        idCmd,
		"uname":     unameCmd,
		"env":       envCmd,
		"printenv":  printenvCmd,
		"awk":       awkCmd,
		"gawk":      awkCmd,
		"rev":       revCmd,
		"tac":       tacCmd,
		"nl":        nlCmd,
		"paste":     pasteCmd,
		"comm":      commCmd,
		"fold":      foldCmd,
		"sha256sum": sha256Cmd,
		"sha1sum":   sha1Cmd,
		"sha512sum": sha512Cmd,
		"md5sum":    md5Cmd,
		"cmp":       cmpCmd,
		"expr":      exprCmd,
		"od":        odCmd,
		"diff":      diffCmd,
		"bc":        bcCmd,
		"column":    columnCmd,
		"expand":    expandCmd,
		"tar":       tarCmd,
		"gzip":      gzipCmd,
		"gunzip":    gunzipCmd,
		"zcat":      zcatCmd,
		"xxd":       xxdCmd,
		"hexdump":   hexdumpCmd,
		"hd":        hdCmd,
		"numfmt":    numfmtCmd,
		"truncate":  truncateCmd,
		"strings":   stringsCmd,
		"unexpand":  unexpandCmd,
		"join":      joinCmd,
		"split":     splitCmd,
		"shuf":      shufCmd,
		"file":      fileCmd,
		"tree":      treeCmd,
		"rg":        rgCmd,
	}
}

// utilitiesVersion is what "<utility> --version" prints after the name.
const utilitiesVersion = "1.0"

// Lookup returns the command called name. "<name> --version" (the one
// argument) prints the utility's name and version, as scripts probe it;
// "<name> --help" its usage (see Usage).
func Lookup(name string) (Func, bool) {
	f, ok := commands[name]
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, env *Env, args []string) int {
		if len(args) == 1 && args[0] == "--version" && name != "printf" {
			// Scripts probe "sed --version | grep -q GNU" to pick GNU
			// syntax, which the sandbox's utilities follow.
			fmt.Fprintf(env.Stdout, "%s (GNU-compatible, demiurge sandbox) %s\n", name, utilitiesVersion)
			return 0
		}
		if len(args) == 1 && args[0] == "--help" {
			if u, ok := Usage(name); ok {
				io.WriteString(env.Stdout, u)
				return 0
			}
		}
		if env.MaxOutputBytes <= 0 {
			c := newCmd(ctx, name, env)
			status := f(c, args)
			c.release()
			return status
		}
		lw := &limitedWriter{w: env.Stdout, n: env.MaxOutputBytes}
		limited := *env
		limited.Stdout = lw
		c := newCmd(ctx, name, &limited)
		c.outLimit = lw
		status := f(c, args)
		c.release()
		if lw.exceeded {
			fmt.Fprintf(env.Stderr, "%s: output exceeds %d bytes\n", name, env.MaxOutputBytes)
			return 1
		}
		return status
	}, true
}

// errOutputTooLarge is returned by a limitedWriter past its bound.
var errOutputTooLarge = errors.New("output too large")

// limitedWriter passes at most n bytes, then fails every write; the
// command sees it in cmd.stopped and stops producing.
type limitedWriter struct {
	w        io.Writer
	n        int64
	exceeded bool
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.exceeded {
		return 0, errOutputTooLarge
	}
	if int64(len(p)) > l.n {
		l.exceeded = true
		n, _ := l.w.Write(p[:l.n])
		l.n = 0
		return n, errOutputTooLarge
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// Names returns the names of all commands, sorted.
func Names() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// errStopped is returned by loops that stopped because the command's
// context ended or its output bound was reached.
var errStopped = errors.New("stopped")

// stopped reports whether the command should stop: its context ended or
// it wrote all the output it may.
func (c *cmd) stopped() bool {
	return c.ctx.Err() != nil || (c.outLimit != nil && c.outLimit.exceeded) || c.stdout.broken
}

// pipeWriter is a command's stdout, noting when the reader went away (a
// pipe whose reader ended: "seq 1 1000000000 | head -1"), so that the
// command stops as a writer killed by SIGPIPE would, instead of computing
// output nobody reads.
type pipeWriter struct {
	w       io.Writer
	broken  bool
	gone    bool  // the reader went away; writes are absorbed up to pipeBuffer
	written int64 // bytes the command wrote
}

// Write writes b, or, once the reader is gone, absorbs what a pipe's
// buffer would have taken before the writer blocked and was killed by
// SIGPIPE; past that it fails and the command stops.
func (p *pipeWriter) Write(b []byte) (int, error) {
	p.written += int64(len(b))
	if !p.gone {
		n, err := p.w.Write(b)
		if err == nil || !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, syscall.EPIPE) {
			return n, err
		}
		p.gone = true
	}
	if p.written <= pipeBuffer {
		return len(b), nil
	}
	p.broken = true
	return 0, io.ErrClosedPipe
}

// exitBrokenPipe is the status of a command that stopped because its
// reader went away: 128 + SIGPIPE, as bash reports a writer the signal
// killed. One whose whole output fit in the pipe's buffer never sees its
// reader gone and ends as it would have: "set -o pipefail; seq 3000 |
// head -1" is 0, as bash gives when seq wrote it all before head ended,
// and "seq 100000 | head -1" 141, as bash gives always.
const exitBrokenPipe = 141

// pipeBuffer is what a Linux pipe holds before its writer blocks.
const pipeBuffer = 64 << 10

// errInputTooLarge is returned by a limitedReader past its bound.
var errInputTooLarge = errors.New("input too large")

// limitedReader fails with errInputTooLarge once more than n bytes were
// read, instead of pretending the input ended as io.LimitReader does.
type limitedReader struct {
	r io.Reader
	n int64 // bytes left; <0 = unlimited
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(p)
	}
	if l.n == 0 {
		// Probe for one more byte: input of exactly the bound is fine.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, errInputTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// cmd is the state of one running command: its name, environment and a
// buffered stdout that run flushes.
type cmd struct {
	ctx      context.Context
	name     string
	env      *Env
	out      *bufio.Writer
	stdout   pipeWriter // what out writes to
	in       io.Reader
	outLimit *limitedWriter // nil: no output bound
	failed   int            // the least status done returns (an unreadable input)
	// mem is what the command holds of the script's memory budget
	// (Env.Budget), released when it ends.
	mem *budget.Meter
}

var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4096) }}

func newCmd(ctx context.Context, name string, env *Env) *cmd {
	n := env.MaxInputBytes
	if n <= 0 {
		n = -1
	}
	c := &cmd{
		ctx:    ctx,
		name:   name,
		env:    env,
		out:    writers.Get().(*bufio.Writer),
		stdout: pipeWriter{w: env.Stdout},
		in:     &limitedReader{r: env.Stdin, n: n},
		mem:    env.Budget.NewMeter(),
	}
	c.out.Reset(&c.stdout)
	return c
}

// release flushes stdout and returns the buffer to the pool.
func (c *cmd) release() {
	c.mem.Close()
	c.out.Flush()
	c.out.Reset(nil)
	writers.Put(c.out)
	c.out = nil
}

// errf prints "name: msg" on stderr and returns status. Once the output
// bound stopped the command, the wrapper reports that instead.
func (c *cmd) errf(status int, format string, args ...any) int {
	c.out.Flush()
	if c.outLimit != nil && c.outLimit.exceeded {
		return status
	}
	if c.stdout.broken {
		return exitBrokenPipe // nothing to say: the reader is gone
	}
	fmt.Fprintf(c.env.Stderr, c.name+": "+format+"\n", args...)
	return status
}

// readErr reports a failed read of stdin and returns its exit status.
func (c *cmd) readErr(err error) int {
	var be *budget.ExceededError
	if errors.As(err, &be) {
		return c.errf(1, "%v", be)
	}
	if errors.Is(err, errInputTooLarge) {
		return c.errf(1, "input exceeds %d bytes", c.env.MaxInputBytes)
	}
	if c.stopped() {
		return c.errf(1, "interrupted")
	}
	return c.errf(1, "read error: %v", err)
}

// done flushes stdout and returns status, raised to the status of an
// input that could not be read (see fail).
func (c *cmd) done(status int) int {
	if err := c.out.Flush(); err != nil && status == 0 {
		status = 1
	}
	if c.stdout.broken {
		return exitBrokenPipe
	}
	return max(status, c.failed)
}

// readAll reads stdin whole, within MaxInputBytes and the memory
// budget (the data is held until the command ends).
func (c *cmd) readAll() ([]byte, error) {
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			if err := c.hold(int64(cap(b))); err != nil {
				return b, err
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := c.in.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
	}
}

// hold charges n more bytes the command holds to the script's memory
// budget (Env.Budget); past the budget it fails with a
// *budget.ExceededError (readErr reports it), and the script stops.
func (c *cmd) hold(n int64) error {
	return c.mem.Grow(n)
}

// eachLine calls f with every line of stdin, without its newline; last is
// true for a final line that had no newline. It checks ctx as it goes.
func (c *cmd) eachLine(f func(line string, last bool) bool) error {
	br := bufio.NewReaderSize(c.in, 32*1024)
	for i := 0; ; i++ {
		if i&1023 == 1023 && c.stopped() {
			return errStopped
		}
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			noNL := !strings.HasSuffix(line, "\n")
			if !f(strings.TrimSuffix(line, "\n"), noNL) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// lines reads stdin whole and splits it into lines (without newlines);
// a final line without newline is kept.
func (c *cmd) lines() ([]string, error) {
	data, err := c.readAll()
	if err != nil {
		return nil, err
	}
	lines := splitLines(string(data))
	// the line headers; their bytes are data's
	if err := c.hold(int64(len(lines)) * 16); err != nil {
		return nil, err
	}
	return lines, nil
}

// splitLines splits s into lines without their newlines; a final line
// without newline is kept, and "" has no lines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// writeLines writes each line followed by a newline.
func (c *cmd) writeLines(lines []string) {
	for _, l := range lines {
		c.out.WriteString(l)
		c.out.WriteByte('\n')
	}
}

// flagSet parses GNU-style flags: "-abc" is "-a" "-b" "-c", "-n5" and
// "-n 5" give -n the value "5" when 'n' is in takesValue, "--long=v" gives
// --long the value v. Flags may follow operands (GNU permutation); "--"
// ends the flags.
type flagSet struct {
	args       []string
	i          int
	takesValue string
	pending    []string
	operands   []string
}

func newFlags(args []string, takesValue string) *flagSet {
	return &flagSet{args: args, takesValue: takesValue}
}

// next returns the next flag ("-x") and its value, or ok=false when no
// flags remain. err is set for a flag missing its value.
func (fs *flagSet) next() (flag, value string, ok bool, err error) {
	if len(fs.pending) > 0 {
		f := fs.pending[0]
		fs.pending = fs.pending[1:]
		return fs.finish(f)
	}
	for {
		if fs.i >= len(fs.args) {
			return "", "", false, nil
		}
		a := fs.args[fs.i]
		if a == "--" {
			fs.operands = append(fs.operands, fs.args[fs.i+1:]...)
			fs.i = len(fs.args)
			return "", "", false, nil
		}
		if len(a) < 2 || a[0] != '-' {
			fs.operands = append(fs.operands, a)
			fs.i++
			continue
		}
		break
	}
	a := fs.args[fs.i]
	fs.i++
	if strings.HasPrefix(a, "--") {
		if k, v, found := strings.Cut(a, "="); found {
			return k, v, true, nil
		}
		return a, "", true, nil
	}
	// -abc or -n5
	for j := 1; j < len(a); j++ {
		f := "-" + string(a[j])
		if strings.IndexByte(fs.takesValue, a[j]) >= 0 {
			if j+1 < len(a) {
				fs.pending = append(fs.pending, f+"\x00"+a[j+1:])
			} else {
				fs.pending = append(fs.pending, f)
			}
			break
		}
		fs.pending = append(fs.pending, f)
	}
	f := fs.pending[0]
	fs.pending = fs.pending[1:]
	return fs.finish(f)
}

func (fs *flagSet) finish(f string) (string, string, bool, error) {
	if k, v, found := strings.Cut(f, "\x00"); found {
		return k, v, true, nil
	}
	if len(f) == 2 && strings.IndexByte(fs.takesValue, f[1]) >= 0 {
		if fs.i >= len(fs.args) {
			return f, "", true, fmt.Errorf("option requires an argument -- '%c'", f[1])
		}
		v := fs.args[fs.i]
		fs.i++
		return f, v, true, nil
	}
	return f, "", true, nil
}

// joinLongValues rewrites "--name value" as "--name=value" for the
// named long options, which GNU's getopt_long lets take their required
// value from the next argument.
func joinLongValues(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			return append(out, args[i:]...)
		}
		if i+1 < len(args) && slices.Contains(names, args[i]) {
			out = append(out, args[i]+"="+args[i+1])
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// rest returns the operands, in order, once next has returned ok=false.
func (fs *flagSet) rest() []string { return append(fs.operands, fs.args[fs.i:]...) }

// errUnknownFlag is what a setter passed to cmd.flags returns for a flag it
// does not know.
var errUnknownFlag = errors.New("unknown option")

// flags parses the GNU-style flags of args (see flagSet; takesValue names
// the short flags that take a value) and calls set with each flag and its
// value, in order, then returns the operands. A flag missing its value, a
// flag set does not know (set returns errUnknownFlag: "unknown option: -x")
// or a bad value (set returns another error, printed as it is) is reported
// on stderr; ok is false then and st is status.
func (c *cmd) flags(args []string, takesValue string, status int, set func(flag, value string) error) (operands []string, st int, ok bool) {
	fs := newFlags(args, takesValue)
	for {
		f, v, more, err := fs.next()
		if err != nil {
			return nil, c.errf(status, "%v", err), false
		}
		if !more {
			return fs.rest(), 0, true
		}
		if err := set(f, v); errors.Is(err, errUnknownFlag) {
			return nil, c.errf(status, "unknown option: %s", f), false
		} else if err != nil {
			return nil, c.errf(status, "%v", err), false
		}
	}
}

// stdinFlags parses args as flags does and refuses file operands, for a
// command that reads only stdin. When ok is false the command ends with
// status st (the message is written).
func (c *cmd) stdinFlags(args []string, takesValue string, status int, set func(flag, value string) error) (st int, ok bool) {
	rest, st, ok := c.flags(args, takesValue, status, set)
	if !ok {
		return st, false
	}
	return c.operands(rest)
}

// copyStdin copies stdin to stdout and returns status, or 1 when reading
// fails or the command is stopped.
func (c *cmd) copyStdin(status int) int {
	buf := make([]byte, 32*1024)
	for {
		if c.stopped() {
			return c.errf(1, "interrupted")
		}
		n, err := c.in.Read(buf)
		c.out.Write(buf[:n])
		if err == io.EOF {
			return c.done(status)
		}
		if err != nil {
			return c.readErr(err)
		}
	}
}
