package coreutils

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// countArg parses the N of head/tail -n N; a leading '+' (from) or '-'
// (all but) is reported.
func countArg(v string) (n int64, sign byte, ok bool) {
	if v != "" && (v[0] == '+' || v[0] == '-') {
		sign = v[0]
		v = v[1:]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, sign, err == nil && n >= 0
}

// headTailArgs parses -n N, -c N, -N and --lines=N for head and tail;
// status is -1 when the arguments are good. headers is -1 for -q, 1 for
// -v, 0 by default.
func headTailArgs(c *cmd, args []string) (files []string, n int64, sign byte, bytes bool, headers int, status int) {
	n = 10
	var fixed []string
	for i, a := range args {
		afterFlag := i > 0 && (args[i-1] == "-n" || args[i-1] == "-c" || args[i-1] == "--lines" || args[i-1] == "--bytes")
		if !afterFlag && len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			fixed = append(fixed, "-n", a[1:])
		} else {
			fixed = append(fixed, a)
		}
	}
	// --lines N and --bytes N, as GNU takes them besides --lines=N
	fixed = joinLongValues(fixed, "--lines", "--bytes")
	rest, st, ok := c.flags(fixed, "nc", 1, func(f, v string) error {
		switch f {
		case "-n", "--lines", "-c", "--bytes":
			var good bool
			n, sign, good = countArg(v)
			if !good {
				what := "lines"
				if f == "-c" || f == "--bytes" {
					what = "bytes"
				}
				return fmt.Errorf("invalid number of %s: '%s'", what, v)
			}
			bytes = f == "-c" || f == "--bytes"
		case "-q", "--quiet", "--silent":
			headers = -1
		case "-v", "--verbose":
			headers = 1
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return nil, 0, 0, false, 0, st
	}
	return rest, n, sign, bytes, headers, -1
}

// eachHeaded runs fn on each input of head or tail, with "==> f <=="
// headers when there are several (or -v).
func (c *cmd) eachHeaded(files []string, headers int, fn func()) {
	show := headers > 0 || (headers == 0 && len(files) > 1)
	first := true
	c.eachInput(files, 1, func(name string) bool {
		if show {
			if !first {
				c.out.WriteByte('\n')
			}
			if name == "-" {
				name = "standard input"
			}
			c.out.WriteString("==> " + name + " <==\n")
		}
		first = false
		fn()
		return !c.stopped()
	})
}

// headCmd prints the first lines (or bytes) of stdin: head [-n N|-N|-c N].
// head -n -N prints all but the last N lines.
func headCmd(c *cmd, args []string) int {
	files, n, sign, bytes, headers, st := headTailArgs(c, args)
	if st >= 0 {
		return st
	}
	status := -1
	c.eachHeaded(files, headers, func() {
		if st := c.head(n, sign, bytes); st != 0 {
			status = st
		}
	})
	if status > 0 {
		return status
	}
	return c.done(0)
}

// head prints the first n lines or bytes of the input; it returns 0 or
// the status of a failed read (reported).
func (c *cmd) head(n int64, sign byte, bytes bool) int {
	if bytes {
		if sign != '-' {
			if _, err := io.CopyN(c.out, c.in, n); err != nil && err != io.EOF {
				return c.readErr(err)
			}
			return 0
		}
		data, err := c.readAll()
		if err != nil {
			return c.readErr(err)
		}
		c.out.Write(data[:max(0, int64(len(data))-n)])
		return 0
	}
	if sign == '-' {
		lines, err := c.lines()
		if err != nil {
			return c.readErr(err)
		}
		c.writeLines(lines[:max(0, int64(len(lines))-n)])
		return 0
	}
	var i int64
	if n == 0 {
		return 0
	}
	err := c.eachLine(func(l string, noNL bool) bool {
		c.out.WriteString(l)
		if !noNL {
			c.out.WriteByte('\n')
		}
		i++
		return i < n
	})
	if err != nil {
		return c.readErr(err)
	}
	return 0
}

// tailCmd prints the last lines (or bytes) of stdin: tail [-n N|-N|-n +N|-c N].
func tailCmd(c *cmd, args []string) int {
	files, n, sign, bytes, headers, st := headTailArgs(c, args)
	if st >= 0 {
		return st
	}
	status := -1
	c.eachHeaded(files, headers, func() {
		if st := c.tail(n, sign, bytes); st != 0 {
			status = st
		}
	})
	if status > 0 {
		return status
	}
	return c.done(0)
}

// tail prints the last n lines or bytes of the input (from line n with
// sign '+'); it returns 0 or the status of a failed read (reported).
func (c *cmd) tail(n int64, sign byte, bytes bool) int {
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	if bytes {
		if sign == '+' {
			c.out.Write(data[min(max(n-1, 0), int64(len(data))):])
		} else {
			c.out.Write(data[max(0, int64(len(data))-n):])
		}
		return 0
	}
	s := string(data)
	noNL := s != "" && !strings.HasSuffix(s, "\n")
	lines := splitLines(s)
	var out []string
	if sign == '+' {
		out = lines[min(max(n-1, 0), int64(len(lines))):]
	} else {
		out = lines[max(0, int64(len(lines))-n):]
	}
	for i, l := range out {
		c.out.WriteString(l)
		if i < len(out)-1 || !noNL {
			c.out.WriteByte('\n')
		}
	}
	return 0
}
