package coreutils

import (
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/escape"
)

// maxXargsRuns bounds how many command lines one xargs may run; the
// sandbox's command limit applies to each of them as well.
const maxXargsRuns = 100000

// xargsCmd builds command lines from stdin and runs them in the sandbox:
// xargs [-n N] [-L N] [-I REPL] [-0] [-d DELIM] [-r] [-P N] [COMMAND
// [ARG...]]; -P's commands run one at a time. The default command is echo. Exit status 123 when a command failed, 127 when
// it does not exist.
func xargsCmd(c *cmd, args []string) int {
	ctx := c.ctx
	env := c.env
	if env.Exec == nil {
		return c.errf(126, "running commands is disabled")
	}
	maxArgs := 0
	repl := ""
	delim := ""
	noEmpty := false
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		val := func(flag string) (string, bool) {
			if len(a) > len(flag) {
				return a[len(flag):], true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		switch {
		case a == "-0" || a == "--null":
			delim = "\x00"
		case a == "-r" || a == "--no-run-if-empty":
			noEmpty = true
		case a == "-t" || a == "--verbose" || a == "-x":
		case strings.HasPrefix(a, "-n"):
			v, ok := val("-n")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 1 {
				return c.errf(1, "invalid number for -n option")
			}
			maxArgs = n
		case strings.HasPrefix(a, "-P") || strings.HasPrefix(a, "--max-procs"):
			// The commands run one after the other here: parallelism
			// changes no result a script can rely on, only the order of
			// interleaved output.
			flag := "-P"
			if strings.HasPrefix(a, "--max-procs") {
				flag = "--max-procs="
				if a == "--max-procs" {
					flag = a
				}
			}
			v, ok := val(flag)
			if n, err := strconv.Atoi(v); !ok || err != nil || n < 0 {
				return c.errf(1, "invalid number for -P option")
			}
		case strings.HasPrefix(a, "-L"):
			v, ok := val("-L")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 1 {
				return c.errf(1, "invalid number for -L option")
			}
			maxArgs, delim = n, "\n"
		case strings.HasPrefix(a, "-I"):
			v, ok := val("-I")
			if !ok || v == "" {
				return c.errf(1, "option requires an argument -- 'I'")
			}
			repl, delim = v, "\n"
		case strings.HasPrefix(a, "-d"):
			v, ok := val("-d")
			if !ok {
				return c.errf(1, "option requires an argument -- 'd'")
			}
			s, _, _ := escape.Printf(v, true)
			if len(s) != 1 {
				return c.errf(1, "invalid delimiter %q", v)
			}
			delim = s
		default:
			return c.errf(1, "unknown option: %s", a)
		}
	}
	command := args[i:]
	if len(command) == 0 {
		command = []string{"echo"}
	}
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	var items []string
	if delim == "" {
		items = splitXargsWords(string(data))
	} else {
		s := string(data)
		if delim == "\n" {
			s = strings.TrimSuffix(s, "\n")
		} else {
			s = strings.TrimSuffix(s, delim)
		}
		if s != "" {
			items = strings.Split(s, delim)
		}
		if delim == "\n" && repl != "" {
			kept := items[:0]
			for _, it := range items {
				if it = strings.TrimLeft(it, " \t"); it != "" {
					kept = append(kept, it)
				}
			}
			items = kept
		}
	}
	c.out.Flush()
	status := 0
	runs := 0
	run := func(argv []string) bool {
		runs++
		if runs > maxXargsRuns {
			c.errf(1, "more than %d command lines", maxXargsRuns)
			status = 1
			return false
		}
		st := env.Exec(ctx, argv, strings.NewReader(""), env.Stdout, env.Stderr)
		switch {
		case st == 127 || st == 126:
			status = st
			return false
		case st == 255:
			status = 124
			return false
		case st != 0:
			status = 123
		}
		return ctx.Err() == nil
	}
	switch {
	case repl != "":
		for _, it := range items {
			argv := make([]string, len(command))
			for j, a := range command {
				argv[j] = strings.ReplaceAll(a, repl, it)
			}
			if !run(argv) {
				break
			}
		}
	case len(items) == 0:
		if !noEmpty {
			run(append([]string(nil), command...))
		}
	default:
		step := len(items)
		if maxArgs > 0 {
			step = maxArgs
		}
		for start := 0; start < len(items); start += step {
			argv := append(append([]string(nil), command...), items[start:min(start+step, len(items))]...)
			if !run(argv) {
				break
			}
		}
	}
	return status
}

// splitXargsWords splits input as xargs does by default: on blanks and
// newlines, honouring single and double quotes and backslashes.
func splitXargsWords(s string) []string {
	var words []string
	var b strings.Builder
	inWord := false
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else {
				b.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote = ch
			inWord = true
		case ch == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			inWord = true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, b.String())
	}
	return words
}
