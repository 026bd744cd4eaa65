package coreutils

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// uniqCmd drops adjacent duplicate lines: uniq [-c -d -u -i -f N -s N
// -w N].
func uniqCmd(c *cmd, args []string) int {
	var count, dups, uniques, icase bool
	skipFields, skipChars, width := 0, 0, -1
	files, st, ok := c.flags(args, "fsw", 1, func(f, v string) error {
		switch f {
		case "-c", "--count":
			count = true
		case "-d", "--repeated":
			dups = true
		case "-u", "--unique":
			uniques = true
		case "-i", "--ignore-case":
			icase = true
		case "-f", "--skip-fields":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%s: invalid number of fields to skip", v)
			}
			skipFields = n
		case "-s", "--skip-chars":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%s: invalid number of bytes to skip", v)
			}
			skipChars = n
		case "-w", "--check-chars":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%s: invalid number of bytes to compare", v)
			}
			width = n
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) > 2 {
		return c.errf(1, "extra operand '%s'", files[2])
	}
	if len(files) > 0 {
		if st, ok := c.inputs(files[:1], 1); !ok {
			return st
		}
	}
	var output *strings.Builder
	if len(files) == 2 && files[1] != "-" {
		output = &strings.Builder{}
	}
	var prev string
	n := 0
	flush := func() {
		if n == 0 || (dups && n < 2) || (uniques && n > 1) {
			return
		}
		var w io.Writer = c.out
		if output != nil {
			w = output
		}
		if count {
			fmt.Fprintf(w, "%7d %s\n", n, prev)
		} else {
			io.WriteString(w, prev+"\n")
		}
	}
	key := func(s string) string {
		for range skipFields {
			s = strings.TrimLeft(s, " \t")
			i := strings.IndexAny(s, " \t")
			if i < 0 {
				return ""
			}
			s = s[i:]
		}
		if skipChars >= len(s) {
			return ""
		}
		s = s[skipChars:]
		if width >= 0 && width < len(s) {
			s = s[:width]
		}
		return s
	}
	same := func(a, b string) bool {
		a, b = key(a), key(b)
		if icase {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	err := c.eachLine(func(l string, _ bool) bool {
		if n > 0 && same(l, prev) {
			n++
			return true
		}
		flush()
		prev, n = l, 1
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	flush()
	if output != nil && !c.writeFile(files[1], []byte(output.String())) {
		return c.done(1)
	}
	return c.done(0)
}

// commCmd compares two sorted files: comm [-1] [-2] [-3] FILE1 FILE2.
func commCmd(c *cmd, args []string) int {
	var hide [4]bool
	outSep := "\t"
	files, st, ok := c.flags(args, "", 1, func(f, v string) error {
		switch {
		case f == "--output-delimiter":
			outSep = v
			return nil
		case f == "--nocheck-order" || f == "--check-order":
			return nil
		case len(f) == 2 && f[1] >= '1' && f[1] <= '3':
			hide[f[1]-'0'] = true
			return nil
		}
		return errUnknownFlag
	})
	if !ok {
		return st
	}
	if len(files) != 2 {
		return c.errf(1, "missing operand: comm FILE1 FILE2")
	}
	var a, b []string
	if a, ok = c.readLines(files[0]); !ok {
		return c.done(1)
	}
	if b, ok = c.readLines(files[1]); !ok {
		return c.done(1)
	}
	col := func(n int, s string) {
		if hide[n] {
			return
		}
		for i := 1; i < n; i++ {
			if !hide[i] {
				c.out.WriteString(outSep)
			}
		}
		c.out.WriteString(s + "\n")
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			col(1, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			col(2, b[j])
			j++
		default:
			col(3, a[i])
			i++
			j++
		}
	}
	return c.done(0)
}
