package coreutils

import (
	"fmt"
	"strconv"
)

// foldCmd wraps lines: fold [-w N] [-s] [-b] [FILE]...
func foldCmd(c *cmd, args []string) int {
	width, spaces := 80, false
	var fixed []string
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			fixed = append(fixed, "-w", a[1:])
		} else {
			fixed = append(fixed, a)
		}
	}
	files, st, ok := c.flags(fixed, "w", 1, func(f, v string) error {
		switch f {
		case "-w", "--width":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("invalid number of columns: %s", quote(v))
			}
			width = n
		case "-s", "--spaces":
			spaces = true
		case "-b", "--bytes":
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
	err := c.eachLine(func(l string, noNL bool) bool {
		rs := []rune(l)
		for len(rs) > width {
			cut := width
			if spaces {
				for k := width - 1; k > 0; k-- {
					if rs[k] == ' ' || rs[k] == '\t' {
						cut = k + 1
						break
					}
				}
			}
			c.out.WriteString(string(rs[:cut]) + "\n")
			rs = rs[cut:]
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
