package coreutils

import (
	"fmt"
)

// cmpCmd compares two files byte by byte: cmp [-s] FILE1 FILE2.
func cmpCmd(c *cmd, args []string) int {
	silent := false
	files, st, ok := c.flags(args, "", 2, func(f, _ string) error {
		switch f {
		case "-s", "--silent", "--quiet":
			silent = true
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) != 2 {
		return c.errf(2, "missing operand: cmp FILE1 FILE2")
	}
	a, err := c.readFile(files[0])
	if err != nil {
		return c.fileErr(2, files[0], err)
	}
	b, err := c.readFile(files[1])
	if err != nil {
		return c.fileErr(2, files[1], err)
	}
	line := 1
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if !silent {
				fmt.Fprintf(c.out, "%s %s differ: byte %d, line %d\n", files[0], files[1], i+1, line)
			}
			return c.done(1)
		}
		if a[i] == '\n' {
			line++
		}
	}
	if len(a) != len(b) {
		if !silent {
			short := files[0]
			if len(b) < len(a) {
				short = files[1]
			}
			c.out.Flush()
			fmt.Fprintf(c.env.Stderr, "cmp: EOF on %s after byte %d\n", short, min(len(a), len(b)))
		}
		return c.done(1)
	}
	return c.done(0)
}
