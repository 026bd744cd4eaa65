package coreutils

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// treeOpts are tree's settings.
type treeOpts struct {
	all, dirsOnly, fullPath, noIndent, classify, dirsFirst, noReport bool
	maxDepth                                                         int
	exclude, include                                                 []string
	dirs, files                                                      int
}

// treeCmd draws directories as trees: tree [-a -d -f -i -F -L LEVEL -I
// PATTERN -P PATTERN --dirsfirst --noreport] [DIR]...
func treeCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	o := treeOpts{maxDepth: -1}
	args = joinLongValues(args, "--filelimit")
	dirs, st, ok := c.flags(args, "LIP", 1, func(f, v string) error {
		switch f {
		case "-a":
			o.all = true
		case "-d":
			o.dirsOnly = true
		case "-f":
			o.fullPath = true
		case "-i":
			o.noIndent = true
		case "-F":
			o.classify = true
		case "--dirsfirst":
			o.dirsFirst = true
		case "--noreport":
			o.noReport = true
		case "-L":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return gnuMsg("Invalid level, must be greater than 0.")
			}
			o.maxDepth = n
		case "-I":
			o.exclude = append(o.exclude, strings.Split(v, "|")...)
		case "-P":
			o.include = append(o.include, strings.Split(v, "|")...)
		case "-n", "-C", "--charset", "-l", "--noreport=":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	status := 0
	for _, d := range dirs {
		info, err := c.env.FS.Stat(c.ctx, c.abs(d))
		if err != nil || !info.IsDir() {
			c.out.WriteString(d + "  [error opening dir]\n")
			status = 2
			continue
		}
		name := d
		if len(name) > 1 {
			name = strings.TrimRight(name, "/")
		}
		if o.classify && !strings.HasSuffix(name, "/") {
			name += "/"
		}
		c.out.WriteString(name + "\n")
		before := o.dirs + o.files
		if err := c.treeDir(&o, d, c.abs(d), "", 1); err != nil {
			return c.errf(2, "interrupted")
		}
		if o.dirs+o.files > before {
			o.dirs++ // tree 2 counts the top directory only when it listed something
		}
	}
	if !o.noReport {
		dn := "directories"
		if o.dirs == 1 {
			dn = "directory"
		}
		if o.dirsOnly {
			fmt.Fprintf(c.out, "\n%d %s\n", o.dirs, dn)
		} else {
			fn := "files"
			if o.files == 1 {
				fn = "file"
			}
			fmt.Fprintf(c.out, "\n%d %s, %d %s\n", o.dirs, dn, o.files, fn)
		}
	}
	return c.done(status)
}

func (c *cmd) treeDir(o *treeOpts, shown, abs, prefix string, depth int) error {
	if c.stopped() {
		return errStopped
	}
	if o.maxDepth > 0 && depth > o.maxDepth {
		return nil
	}
	entries, err := c.env.FS.ReadDir(c.ctx, abs)
	if err != nil {
		return nil
	}
	var keep []*vfs.Info
	for _, e := range entries {
		n := e.Name()
		if !o.all && strings.HasPrefix(n, ".") {
			continue
		}
		if o.dirsOnly && !e.IsDir() {
			continue
		}
		if matchAny(o.exclude, n) {
			continue
		}
		if len(o.include) > 0 && !e.IsDir() && !matchAny(o.include, n) {
			continue
		}
		keep = append(keep, e)
	}
	slices.SortStableFunc(keep, func(a, b *vfs.Info) int {
		if o.dirsFirst && a.IsDir() != b.IsDir() {
			if a.IsDir() {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name(), b.Name())
	})
	for i, e := range keep {
		last := i == len(keep)-1
		branch, next := "├── ", "│\u00a0\u00a0 " // tree's line: two no-break spaces
		if last {
			branch, next = "└── ", "    "
		}
		name := e.Name()
		full := strings.TrimSuffix(shown, "/") + "/" + e.Name()
		if o.fullPath {
			name = full
		}
		if o.classify && e.IsDir() {
			name += "/"
		}
		line := prefix + branch + name
		if o.noIndent {
			line = name
		}
		c.out.WriteString(line + "\n")
		childAbs := abs + "/" + e.Name()
		if abs == "/" {
			childAbs = "/" + e.Name()
		}
		if e.IsDir() {
			o.dirs++
			if err := c.treeDir(o, full, childAbs, prefix+next, depth+1); err != nil {
				return err
			}
		} else {
			o.files++
		}
	}
	return nil
}
