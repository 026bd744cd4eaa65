package coreutils

import (
	"path"
	"strings"
)

// basenameCmd strips directories (and SUFFIX) from NAME: basename NAME
// [SUFFIX] | basename -a [-s SUFFIX] NAME...
func basenameCmd(c *cmd, args []string) int {
	multi := false
	suffix := ""
	names, st, ok := c.flags(args, "s", 1, func(f, v string) error {
		switch f {
		case "-a", "--multiple":
			multi = true
		case "-s", "--suffix":
			suffix, multi = v, true
		case "-z", "--zero":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(names) == 0 {
		return c.errf(1, "missing operand")
	}
	if !multi {
		if len(names) > 2 {
			return c.errf(1, "extra operand '%s'", names[2])
		}
		if len(names) == 2 {
			suffix = names[1]
		}
		names = names[:1]
	}
	for _, n := range names {
		b := baseName(n)
		if suffix != "" && b != suffix {
			b = strings.TrimSuffix(b, suffix)
		}
		c.out.WriteString(b)
		c.out.WriteByte('\n')
	}
	return c.done(0)
}

func baseName(n string) string {
	if n == "" {
		return ""
	}
	t := strings.TrimRight(n, "/")
	if t == "" {
		return "/"
	}
	return path.Base(t)
}

// dirnameCmd strips the last component of each NAME.
func dirnameCmd(c *cmd, args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return c.errf(1, "missing operand")
	}
	for _, n := range args {
		c.out.WriteString(dirName(n))
		c.out.WriteByte('\n')
	}
	return c.done(0)
}

func dirName(n string) string {
	t := strings.TrimRight(n, "/")
	if t == "" {
		if strings.HasPrefix(n, "/") {
			return "/"
		}
		return "."
	}
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return "."
	}
	d := strings.TrimRight(t[:i], "/")
	if d == "" {
		return "/"
	}
	return d
}
