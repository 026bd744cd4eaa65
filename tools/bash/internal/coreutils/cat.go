package coreutils

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// catCmd copies its inputs to stdout: cat [-A -b -e -E -n -s -t -T -v]
// [FILE]...
func catCmd(c *cmd, args []string) int {
	var number, nonBlank, squeeze, ends, tabs, nonPrinting bool
	if st, ok := c.stdinFlags(args, "", 2, func(f, _ string) error {
		switch f {
		case "-n", "--number":
			number = true
		case "-b", "--number-nonblank":
			nonBlank = true
		case "-s", "--squeeze-blank":
			squeeze = true
		case "-E", "--show-ends":
			ends = true
		case "-T", "--show-tabs":
			tabs = true
		case "-v", "--show-nonprinting":
			nonPrinting = true
		case "-A", "--show-all":
			ends, tabs, nonPrinting = true, true, true
		case "-e":
			ends, nonPrinting = true, true
		case "-t":
			tabs, nonPrinting = true, true
		case "-u":
		default:
			return errUnknownFlag
		}
		return nil
	}); !ok {
		return st
	}
	if !number && !nonBlank && !squeeze && !ends && !tabs && !nonPrinting {
		return c.copyStdin(0)
	}
	n := 0
	prevBlank := false
	err := c.eachLine(func(l string, noNL bool) bool {
		blank := l == "" && !noNL
		if squeeze && blank && prevBlank {
			return true
		}
		prevBlank = blank
		switch {
		case nonBlank && l != "":
			n++
			fmt.Fprintf(c.out, "%6d\t", n)
		case number && !nonBlank:
			n++
			fmt.Fprintf(c.out, "%6d\t", n)
		}
		if tabs || nonPrinting {
			l = showChars(l, tabs, nonPrinting)
		}
		c.out.WriteString(l)
		if !noNL {
			if ends {
				c.out.WriteByte('$')
			}
			c.out.WriteByte('\n')
		}
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	return c.done(0)
}

// revCmd reverses the characters of each line: rev [FILE]...
func revCmd(c *cmd, args []string) int {
	files, st, ok := c.flags(args, "", 1, func(string, string) error { return errUnknownFlag })
	if !ok {
		return st
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	err := c.eachLine(func(l string, noNL bool) bool {
		rs := []rune(l)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		c.out.WriteString(string(rs))
		if !noNL {
			c.out.WriteByte('\n')
		}
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	return c.done(0)
}

// tacCmd prints lines last first: tac [FILE]...
func tacCmd(c *cmd, args []string) int {
	files, st, ok := c.flags(args, "", 1, func(string, string) error { return errUnknownFlag })
	if !ok {
		return st
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	s := string(data)
	if s == "" {
		return c.done(0)
	}
	noNL := !strings.HasSuffix(s, "\n")
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		c.out.WriteString(lines[i])
		// The last line without a newline runs into the next, as GNU tac.
		if !(i == len(lines)-1 && noNL) {
			c.out.WriteByte('\n')
		}
	}
	return c.done(0)
}

// nlCmd numbers lines: nl [-b a|t|n|pRE] [-n ln|rn|rz] [-w N] [-s SEP]
// [-v START] [-i INCR] [FILE]...
func nlCmd(c *cmd, args []string) int {
	style, format, width, sep, start, incr := "t", "rn", 6, "\t", 1, 1
	var re *regexp.Regexp
	files, st, ok := c.flags(args, "bnwsvi", 1, func(f, v string) error {
		switch f {
		case "-b", "--body-numbering":
			switch {
			case v == "a" || v == "t" || v == "n":
				style = v
			case strings.HasPrefix(v, "p"):
				r, err := compileRegex(v[1:], false, false)
				if err != nil {
					return fmt.Errorf("invalid regular expression: %v", err)
				}
				style, re = "p", r
			default:
				return fmt.Errorf("invalid body numbering style: %s", quote(v))
			}
		case "-n", "--number-format":
			if v != "ln" && v != "rn" && v != "rz" {
				return fmt.Errorf("invalid line numbering format: %s", quote(v))
			}
			format = v
		case "-w", "--number-width":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1<<10 {
				return fmt.Errorf("invalid line number field width: %s", quote(v))
			}
			width = n
		case "-s", "--number-separator":
			sep = v
		case "-v", "--starting-line-number":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("invalid starting line number: %s", quote(v))
			}
			start = n
		case "-i", "--line-increment":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("invalid line number increment: %s", quote(v))
			}
			incr = n
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	n := start
	err := c.eachLine(func(l string, noNL bool) bool {
		number := false
		switch style {
		case "a":
			number = true
		case "t":
			number = l != ""
		case "p":
			number = re.MatchString(l)
		}
		if number {
			var num string
			switch format {
			case "ln":
				num = fmt.Sprintf("%-*d", width, n)
			case "rz":
				num = fmt.Sprintf("%0*d", width, n)
			default:
				num = fmt.Sprintf("%*d", width, n)
			}
			c.out.WriteString(num + sep + l)
			n += incr
		} else {
			c.out.WriteString(strings.Repeat(" ", width+len(sep)) + l)
		}
		if !noNL {
			c.out.WriteByte('\n')
		}
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	return c.done(0)
}

// showChars writes l as cat -T and -v show it: tabs as ^I (tabs), other
// control characters as ^X, DEL as ^?, and bytes above 127 as M- and the
// low byte's form (nonPrinting).
func showChars(l string, tabs, nonPrinting bool) string {
	var b strings.Builder
	for i := 0; i < len(l); i++ {
		ch := l[i]
		switch {
		case ch == '\t':
			if tabs {
				b.WriteString("^I")
			} else {
				b.WriteByte(ch)
			}
			continue
		case !nonPrinting:
			b.WriteByte(ch)
			continue
		}
		if ch >= 128 {
			b.WriteString("M-")
			ch -= 128
		}
		switch {
		case ch < 32:
			b.WriteByte('^')
			b.WriteByte(ch + 64)
		case ch == 127:
			b.WriteString("^?")
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}
