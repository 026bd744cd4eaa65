package coreutils

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// parseDuration parses sleep's and timeout's durations: a number of
// seconds (decimals allowed) with an optional suffix s, m, h or d.
func parseDuration(s string) (time.Duration, error) {
	if s == "inf" || s == "infinity" {
		return time.Duration(math.MaxInt64), nil
	}
	mult := time.Second
	switch {
	case strings.HasSuffix(s, "s"):
		s = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		s, mult = s[:len(s)-1], time.Minute
	case strings.HasSuffix(s, "h"):
		s, mult = s[:len(s)-1], time.Hour
	case strings.HasSuffix(s, "d"):
		s, mult = s[:len(s)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsNaN(f) {
		return 0, errors.New("invalid time interval")
	}
	d := f * float64(mult)
	if d > math.MaxInt64 {
		return time.Duration(math.MaxInt64), nil
	}
	return time.Duration(d), nil
}

// sleepCmd waits: sleep NUMBER[smhd]... (the durations add up). The
// script's time limit ends it like any other command.
func sleepCmd(c *cmd, args []string) int {
	if len(args) == 0 {
		return c.errf(1, "missing operand")
	}
	var total time.Duration
	for _, a := range args {
		d, err := parseDuration(a)
		if err != nil {
			return c.errf(1, "invalid time interval %s", quote(a))
		}
		total += d
		if total < 0 {
			total = time.Duration(math.MaxInt64)
		}
	}
	if c.env.Sleep != nil {
		c.env.Sleep(total)
		return c.done(0)
	}
	t := time.NewTimer(total)
	defer t.Stop()
	select {
	case <-t.C:
		return c.done(0)
	case <-c.ctx.Done():
		return c.done(130) // ended by the time limit (or timeout): silently, as by a signal
	}
}

// timeoutCmd runs a command with a time limit: timeout [-s SIGNAL] [-k
// DURATION] [--preserve-status] [--foreground] DURATION COMMAND [ARG]...
// Exit 124 when the limit ends the command.
func timeoutCmd(c *cmd, args []string) int {
	preserve := false
	signal := 15 // SIGTERM
	setSignal := func(name string) bool {
		n, ok := signalNumber(name)
		signal = n
		return ok
	}
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && len(args[i]) > 1 {
		a := args[i]
		switch {
		case a == "--":
			i++
			goto operands
		case a == "--preserve-status":
			preserve = true
		case a == "--foreground" || a == "-v" || a == "--verbose":
		case a == "-s" || a == "--signal":
			i++
			if i >= len(args) {
				return c.errf(125, "option requires an argument -- 's'")
			}
			if !setSignal(args[i]) {
				return c.errf(125, "%s: invalid signal", quote(args[i]))
			}
		case strings.HasPrefix(a, "--signal=") || strings.HasPrefix(a, "-s"):
			v := strings.TrimPrefix(strings.TrimPrefix(a, "--signal="), "-s")
			if !setSignal(v) {
				return c.errf(125, "%s: invalid signal", quote(v))
			}
		case a == "-k" || a == "--kill-after":
			i++
		case strings.HasPrefix(a, "--kill-after=") || strings.HasPrefix(a, "-k"):
		default:
			return c.errf(125, "unknown option: %s", a)
		}
		i++
	}
operands:
	if len(args)-i < 2 {
		return c.errf(125, "missing operand")
	}
	d, err := parseDuration(args[i])
	if err != nil {
		return c.errf(125, "invalid time interval %s", quote(args[i]))
	}
	if c.env.Exec == nil {
		return c.errf(126, "running commands is disabled")
	}
	ctx := c.ctx
	var cancel context.CancelFunc
	if d > 0 {
		ctx, cancel = context.WithTimeout(c.ctx, d)
		defer cancel()
	}
	c.out.Flush()
	status := c.env.Exec(ctx, args[i+1:], c.in, c.env.Stdout, c.env.Stderr)
	if ctx.Err() != nil && c.ctx.Err() == nil {
		if preserve || signal == 9 {
			return 128 + signal // KILL cannot be caught: the command died of it
		}
		return 124
	}
	return status
}

// signalNumber is the number of a signal named as timeout and kill take
// it: "9", "KILL", "SIGKILL" (any case).
func signalNumber(name string) (int, bool) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, n > 0 && n < 65
	}
	n, ok := map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "KILL": 9, "USR1": 10, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15}[strings.TrimPrefix(strings.ToUpper(name), "SIG")]
	return n, ok
}

// yesCmd prints its arguments (or "y") over and over, until the output
// bound or the reader stops it.
func yesCmd(c *cmd, args []string) int {
	line := "y\n"
	if len(args) > 0 {
		line = strings.Join(args, " ") + "\n"
	}
	for i := 0; ; i++ {
		if _, err := c.out.WriteString(line); err != nil || (i&255 == 255 && c.stopped()) {
			return c.done(0) // the reader is gone (141, as SIGPIPE) or the bound reached
		}
	}
}

// whoamiCmd prints the sandbox's user name.
func whoamiCmd(c *cmd, args []string) int {
	c.out.WriteString(c.user() + "\n")
	return c.done(0)
}

// ttyCmd is tty: the sandbox has no terminal, so stdin is never one
// ("not a tty", status 1; -s only the status).
func ttyCmd(c *cmd, args []string) int {
	silent := false
	for _, a := range args {
		switch a {
		case "-s", "--silent", "--quiet":
			silent = true
		default:
			if !strings.HasPrefix(a, "-") {
				return c.errf(2, "extra operand %s", quote(a))
			}
			return c.errf(2, "invalid option -- '%s'", strings.TrimLeft(a, "-"))
		}
	}
	if !silent {
		c.out.WriteString("not a tty\n")
	}
	return c.done(1)
}

// hostnameCmd prints the sandbox's host name.
func hostnameCmd(c *cmd, args []string) int {
	h := c.env.Host
	if h == "" {
		h = "sandbox"
	}
	c.out.WriteString(h + "\n")
	return c.done(0)
}

// idCmd prints the sandbox user's ids: id [-u|-g|-n ...].
func idCmd(c *cmd, args []string) int {
	u := c.user()
	name, only := false, byte(0)
	for _, a := range args {
		for _, f := range strings.TrimPrefix(a, "-") {
			switch f {
			case 'u', 'g', 'G':
				only = byte(f)
			case 'n':
				name = true
			case 'r':
			default:
				return c.errf(1, "invalid option -- '%c'", f)
			}
		}
	}
	switch {
	case only != 0 && name:
		c.out.WriteString(u + "\n")
	case only != 0:
		c.out.WriteString("1000\n")
	default:
		fmt.Fprintf(c.out, "uid=1000(%s) gid=1000(%s) groups=1000(%s)\n", u, u, u)
	}
	return c.done(0)
}

// unameCmd describes the sandbox: uname [-a -s -n -r -m -o].
func unameCmd(c *cmd, args []string) int {
	fields := map[byte]string{'s': "Linux", 'n': c.env.Host, 'r': "6.1.0-sandbox", 'v': "#1 SMP", 'm': "x86_64", 'p': "unknown", 'i': "unknown", 'o': "GNU/Linux"}
	if fields['n'] == "" {
		fields['n'] = "sandbox"
	}
	var want []byte
	for _, a := range args {
		if a == "--all" {
			a = "-a"
		}
		for _, f := range strings.TrimPrefix(a, "-") {
			if f == 'a' {
				want = append(want, 's', 'n', 'r', 'v', 'm', 'o')
				continue
			}
			if _, ok := fields[byte(f)]; !ok {
				return c.errf(1, "invalid option -- '%c'", f)
			}
			want = append(want, byte(f))
		}
	}
	if len(want) == 0 {
		want = []byte{'s'}
	}
	var out []string
	for _, f := range want {
		out = append(out, fields[f])
	}
	c.out.WriteString(strings.Join(out, " ") + "\n")
	return c.done(0)
}

// envCmd prints the environment, or runs a command in it: env [-i] [-u
// NAME] [NAME=VALUE]... [COMMAND [ARG]...]. -i starts from an empty
// environment, -u removes NAME, NAME=VALUE sets it.
func envCmd(c *cmd, args []string) int {
	var assigns, unset []string
	i := 0
	ignore := false
	for i < len(args) {
		a := args[i]
		switch {
		case a == "-i" || a == "--ignore-environment" || a == "-":
			ignore = true
		case a == "-u" || a == "--unset":
			if i+1 >= len(args) {
				return c.errf(125, "option requires an argument -- 'u'")
			}
			i++
			unset = append(unset, args[i])
		case strings.HasPrefix(a, "--unset="):
			unset = append(unset, strings.TrimPrefix(a, "--unset="))
		case strings.HasPrefix(a, "-u") && len(a) > 2:
			unset = append(unset, a[2:])
		case a == "-0" || a == "--null":
		case strings.HasPrefix(a, "-") && a != "--":
			return c.errf(125, "invalid option -- '%s'", strings.TrimLeft(a, "-"))
		case strings.Contains(a, "=") && !strings.HasPrefix(a, "="):
			assigns = append(assigns, a)
		default:
			if a == "--" {
				i++
			}
			goto command
		}
		i++
	}
command:
	changed := ignore || len(unset) > 0 || len(assigns) > 0
	var environ []string
	if !ignore {
		environ = append(environ, c.environ()...)
	}
	drop := func(name string) {
		environ = slices.DeleteFunc(environ, func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return k == name
		})
	}
	for _, name := range unset {
		drop(name)
	}
	for _, kv := range assigns {
		k, _, _ := strings.Cut(kv, "=")
		drop(k)
		environ = append(environ, kv)
	}
	if i >= len(args) {
		for _, kv := range environ {
			c.out.WriteString(kv + "\n")
		}
		return c.done(0)
	}
	c.out.Flush()
	if !changed {
		if c.env.Exec == nil {
			return c.errf(126, "running commands is disabled")
		}
		return c.env.Exec(c.ctx, args[i:], c.in, c.env.Stdout, c.env.Stderr)
	}
	if c.env.ExecEnv == nil {
		return c.errf(126, "running commands is disabled")
	}
	if environ == nil {
		environ = []string{}
	}
	return c.env.ExecEnv(c.ctx, environ, args[i:], c.in, c.env.Stdout, c.env.Stderr)
}

// printenvCmd prints the values of variables, or all exported ones.
func printenvCmd(c *cmd, args []string) int {
	if len(args) == 0 {
		for _, kv := range c.environ() {
			c.out.WriteString(kv + "\n")
		}
		return c.done(0)
	}
	status := 0
	env := map[string]string{}
	for _, kv := range c.environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for _, name := range args {
		v, ok := env[name]
		if !ok {
			status = 1
			continue
		}
		c.out.WriteString(v + "\n")
	}
	return c.done(status)
}

// environ lists the exported variables ("k=v").
func (c *cmd) environ() []string {
	if c.env.Environ == nil {
		return nil
	}
	return c.env.Environ()
}

// timeCmd is GNU time: time [-p] [-f FORMAT] [-o FILE [-a]] COMMAND
// [ARG]..., which runs COMMAND and reports on stderr (or FILE) what
// FORMAT asks: %e %E elapsed, %U %S CPU seconds, %P CPU share, %x the
// exit status, %C the command; the sandbox measures no process's memory
// or I/O, so %M and the other counters are 0. It exits with COMMAND's
// status. (The shell's time keyword is bash's; command time and env time
// reach this.)
func timeCmd(c *cmd, args []string) int {
	format := "%Uuser %Ssystem %Eelapsed %PCPU (%Xtext+%Ddata %Mmaxresident)k\n%Iinputs+%Ooutputs (%Fmajor+%Rminor)pagefaults %Wswaps"
	out, appendOut := "", false
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && len(args[i]) > 1 {
		a := args[i]
		switch {
		case a == "--":
			i++
			goto run
		case a == "-p" || a == "--portability":
			format = "real %e\nuser %U\nsys %S"
		case a == "-a" || a == "--append":
			appendOut = true
		case a == "-v" || a == "--verbose" || a == "-q" || a == "--quiet":
		case a == "-f" || a == "--format" || a == "-o" || a == "--output":
			i++
			if i >= len(args) {
				return c.errf(125, "option requires an argument -- '%s'", strings.TrimLeft(a, "-")[:1])
			}
			if a == "-f" || a == "--format" {
				format = args[i]
			} else {
				out = args[i]
			}
		case strings.HasPrefix(a, "--format="):
			format = strings.TrimPrefix(a, "--format=")
		case strings.HasPrefix(a, "--output="):
			out = strings.TrimPrefix(a, "--output=")
		default:
			return c.errf(125, "invalid option -- '%s'", strings.TrimLeft(a, "-"))
		}
		i++
	}
run:
	if i >= len(args) {
		return c.errf(125, "missing program to run")
	}
	if c.env.Exec == nil {
		return c.errf(126, "running commands is disabled")
	}
	c.out.Flush()
	start := c.now()
	status := c.env.Exec(c.ctx, args[i:], c.in, c.env.Stdout, c.env.Stderr)
	elapsed := c.now().Sub(start).Seconds()
	var b strings.Builder
	if status != 0 {
		fmt.Fprintf(&b, "Command exited with non-zero status %d\n", status)
	}
	for k := 0; k < len(format); k++ {
		ch := format[k]
		if ch == '\\' && k+1 < len(format) {
			k++
			switch format[k] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte('\\')
				b.WriteByte(format[k])
			}
			continue
		}
		if ch != '%' || k+1 >= len(format) {
			b.WriteByte(ch)
			continue
		}
		k++
		switch format[k] {
		case '%':
			b.WriteByte('%')
		case 'e':
			fmt.Fprintf(&b, "%.2f", elapsed)
		case 'E':
			m := int(elapsed) / 60
			fmt.Fprintf(&b, "%d:%05.2f", m, elapsed-float64(m*60))
		case 'U', 'S':
			b.WriteString("0.00")
		case 'P':
			b.WriteString("0%")
		case 'x':
			b.WriteString(strconv.Itoa(status))
		case 'C':
			b.WriteString(strings.Join(args[i:], " "))
		default:
			b.WriteByte('0')
		}
	}
	b.WriteByte('\n')
	if out != "" {
		data := []byte(b.String())
		if appendOut {
			if old, err := c.readFile(out); err == nil {
				data = append(old, data...)
			}
		}
		if c.env.FS == nil {
			return c.errf(125, "%s: cannot write", out)
		}
		if err := c.env.FS.WriteFile(c.ctx, c.abs(out), data, 0o644); err != nil {
			return c.fileErr(125, out, err)
		}
	} else {
		io.WriteString(c.env.Stderr, b.String())
	}
	return status
}
