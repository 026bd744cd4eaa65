package coreutils

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// quote is how GNU utilities quote a file name in their messages.
func quote(p string) string { return "'" + p + "'" }

// lsOpts are the settings of ls.
type lsOpts struct {
	long, all, almostAll, recursive, byTime, bySize, reverse, human, dirOnly, classify, slash, inode bool
	noSort                                                                                           bool
}

// lsCmd lists files: ls [-1 -l -a -A -R -t -S -r -h -d -F -p -U] [FILE]...
// Output is one name a line, as ls writes to a pipe; -l shows the mode,
// size and time of each entry (owner and group are the sandbox user).
func lsCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 2
	}
	var o lsOpts
	files, st, ok := c.flags(args, "", 2, func(f, _ string) error {
		switch f {
		case "-l", "-o", "-g", "-n", "--long":
			o.long = true
		case "-a", "--all":
			o.all = true
		case "-A", "--almost-all":
			o.almostAll = true
		case "-R", "--recursive":
			o.recursive = true
		case "-t":
			o.byTime = true
		case "-S":
			o.bySize = true
		case "-r", "--reverse":
			o.reverse = true
		case "-h", "--human-readable":
			o.human = true
		case "-d", "--directory":
			o.dirOnly = true
		case "-F", "--classify":
			o.classify = true
		case "-p":
			o.slash = true
		case "-U", "-f":
			o.noSort = true
		case "-1", "-C", "-x", "-m", "--color", "--color=never", "--color=auto", "-G", "--group-directories-first", "-v", "-X", "-s", "-L", "-H", "--full-time":
		case "-i", "--inode":
			o.inode = true
		default:
			if strings.HasPrefix(f, "--color") || strings.HasPrefix(f, "--time-style") || strings.HasPrefix(f, "--sort") {
				return nil
			}
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) == 0 {
		files = []string{"."}
	}
	status := 0
	type operand struct {
		name string
		info *vfs.Info
	}
	var plain, dirs []operand
	for _, f := range files {
		info, err := c.env.FS.Stat(c.ctx, c.abs(f))
		if err != nil {
			c.errf(2, "cannot access %s: %s", quote(f), why(err))
			status = 2
			continue
		}
		if info.IsDir() && !o.dirOnly {
			dirs = append(dirs, operand{f, info})
		} else {
			plain = append(plain, operand{f, info})
		}
	}
	var entries []lsEntry
	for _, p := range plain {
		entries = append(entries, lsEntry(p))
	}
	c.lsSort(&o, entries)
	c.lsPrint(&o, entries, false)
	headers := len(files) > 1 || o.recursive
	first := len(plain) == 0
	slices.SortFunc(dirs, func(a, b operand) int { return strings.Compare(a.name, b.name) })
	for _, d := range dirs {
		if st := c.lsDir(&o, d.name, headers, &first); st > status {
			status = st
		}
	}
	return c.done(status)
}

type lsEntry struct {
	name string
	info *vfs.Info
}

func (c *cmd) lsSort(o *lsOpts, es []lsEntry) {
	if o.noSort {
		return
	}
	slices.SortStableFunc(es, func(a, b lsEntry) int {
		var r int
		switch {
		case o.byTime:
			r = -a.info.ModTime().Compare(b.info.ModTime())
		case o.bySize:
			r = -cmpInt64(a.info.Size(), b.info.Size())
		}
		if r == 0 {
			r = strings.Compare(a.name, b.name)
		}
		if o.reverse {
			r = -r
		}
		return r
	})
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lsDir lists one directory (and, with -R, those below it).
func (c *cmd) lsDir(o *lsOpts, name string, header bool, first *bool) int {
	infos, err := c.env.FS.ReadDir(c.ctx, c.abs(name))
	if !*first {
		c.out.WriteByte('\n')
	}
	*first = false
	if header {
		c.out.WriteString(name + ":\n")
	}
	if err != nil {
		c.out.Flush()
		c.errf(2, "cannot open directory %s: %s", quote(name), why(err))
		return 2
	}
	var es []lsEntry
	if o.all {
		if self, err := c.env.FS.Stat(c.ctx, c.abs(name)); err == nil {
			es = append(es, lsEntry{".", self})
		}
		if up, err := c.env.FS.Stat(c.ctx, c.abs(name+"/..")); err == nil {
			es = append(es, lsEntry{"..", up})
		}
	}
	for _, i := range infos {
		if strings.HasPrefix(i.Name(), ".") && !o.all && !o.almostAll {
			continue
		}
		es = append(es, lsEntry{i.Name(), i})
	}
	c.lsSort(o, es)
	c.lsPrint(o, es, true)
	status := 0
	if o.recursive {
		for _, e := range es {
			if e.info.IsDir() && e.name != "." && e.name != ".." {
				sub := name + "/" + e.name
				if strings.HasSuffix(name, "/") {
					sub = name + e.name
				}
				if st := c.lsDir(o, sub, true, first); st > status {
					status = st
				}
				if c.stopped() {
					break
				}
			}
		}
	}
	return status
}

// lsPrint prints entries, with "total" first for a directory's long
// listing.
func (c *cmd) lsPrint(o *lsOpts, es []lsEntry, dir bool) {
	if o.long && dir {
		var blocks int64
		for _, e := range es {
			blocks += diskBlocks(e.info)
		}
		if o.human {
			c.out.WriteString("total " + humanSize(blocks*1024) + "\n")
		} else {
			c.out.WriteString("total " + strconv.FormatInt(blocks, 10) + "\n")
		}
	}
	sizeWidth := 1
	if o.long {
		for _, e := range es {
			sizeWidth = max(sizeWidth, len(c.lsSize(o, e.info)))
		}
	}
	for _, e := range es {
		if o.inode {
			c.out.WriteString("1 ")
		}
		if o.long {
			fmt.Fprintf(c.out, "%s 1 %s %s %*s %s ", modeString(e.info.Mode()), c.user(), c.user(),
				sizeWidth, c.lsSize(o, e.info), lsTime(e.info.ModTime(), c.now()))
		}
		c.out.WriteString(e.name)
		switch {
		case e.info.IsDir() && (o.classify || o.slash):
			c.out.WriteByte('/')
		case o.classify && e.info.Mode()&0o111 != 0 && e.info.Mode().IsRegular():
			c.out.WriteByte('*')
		}
		c.out.WriteByte('\n')
	}
}

func (c *cmd) lsSize(o *lsOpts, i *vfs.Info) string {
	size := i.Size()
	if o.human {
		return humanSize(size)
	}
	return strconv.FormatInt(size, 10)
}

// user is the sandbox's user name.
func (c *cmd) user() string {
	if c.env.User != "" {
		return c.env.User
	}
	return "agent"
}

func (c *cmd) now() time.Time {
	if c.env.Now != nil {
		return c.env.Now()
	}
	return time.Time{}
}

// diskBlocks is the disk use of an entry in 1 KiB blocks, as a file
// system of 4 KiB blocks reports it.
func diskBlocks(i *vfs.Info) int64 {
	return (i.Size() + 4095) / 4096 * 4
}

// humanSize prints a size as ls -h and du -h do: 512, 4.0K, 1.5M, 12G.
func humanSize(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	v := float64(n)
	units := "KMGTPE"
	u := -1
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v < 10 {
		// One decimal, rounded up as GNU does.
		tenths := int64(v * 10)
		if float64(tenths) < v*10 {
			tenths++
		}
		if tenths >= 100 {
			return fmt.Sprintf("%d%c", (tenths+9)/10, units[u])
		}
		return fmt.Sprintf("%d.%d%c", tenths/10, tenths%10, units[u])
	}
	w := int64(v)
	if float64(w) < v {
		w++
	}
	if w >= 1024 && u < len(units)-1 {
		return fmt.Sprintf("1.0%c", units[u+1])
	}
	return fmt.Sprintf("%d%c", w, units[u])
}

// modeString renders a mode as ls -l does: drwxr-xr-x.
func modeString(m fs.FileMode) string {
	b := []byte("----------")
	switch {
	case m.IsDir():
		b[0] = 'd'
	case m&fs.ModeCharDevice != 0:
		b[0] = 'c'
	}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		if m&(1<<(8-i)) != 0 {
			b[i+1] = rwx[i]
		}
	}
	return string(b)
}

// lsTime renders a modification time as ls -l does: "Jan  2 15:04" for
// the last six months, "Jan  2  2006" otherwise.
func lsTime(t, now time.Time) string {
	if !now.IsZero() && (now.Sub(t) > 182*24*time.Hour || t.Sub(now) > time.Hour) {
		return t.Format("Jan _2  2006")
	}
	return t.Format("Jan _2 15:04")
}

// parseMode parses a chmod/mkdir -m mode: octal, or symbolic
// ([ugoa]*[+-=][rwxX]*, comma separated) applied to old.
func parseMode(s string, old fs.FileMode, dir bool) (fs.FileMode, error) {
	if n, err := strconv.ParseUint(s, 8, 32); err == nil {
		if n > 0o7777 {
			return 0, fmt.Errorf("invalid mode: %s", quote(s))
		}
		return fs.FileMode(n).Perm(), nil
	}
	mode := old.Perm()
	for clause := range strings.SplitSeq(s, ",") {
		i := 0
		var who fs.FileMode
		for i < len(clause) && strings.IndexByte("ugoa", clause[i]) >= 0 {
			switch clause[i] {
			case 'u':
				who |= 0o700
			case 'g':
				who |= 0o070
			case 'o':
				who |= 0o007
			case 'a':
				who |= 0o777
			}
			i++
		}
		if who == 0 {
			who = 0o777
		}
		if i >= len(clause) || strings.IndexByte("+-=", clause[i]) < 0 {
			return 0, fmt.Errorf("invalid mode: %s", quote(s))
		}
		for i < len(clause) {
			op := clause[i]
			if strings.IndexByte("+-=", op) < 0 {
				return 0, fmt.Errorf("invalid mode: %s", quote(s))
			}
			i++
			var bits fs.FileMode
			for i < len(clause) && strings.IndexByte("rwxXst", clause[i]) >= 0 {
				switch clause[i] {
				case 'r':
					bits |= 0o444
				case 'w':
					bits |= 0o222
				case 'x':
					bits |= 0o111
				case 'X':
					if dir || mode&0o111 != 0 {
						bits |= 0o111
					}
				}
				i++
			}
			bits &= who
			switch op {
			case '+':
				mode |= bits
			case '-':
				mode &^= bits
			case '=':
				mode = mode&^who | bits
			}
		}
	}
	return mode, nil
}

// mkdirCmd creates directories: mkdir [-p] [-v] [-m MODE] DIR...
func mkdirCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	parents, verbose := false, false
	var mode fs.FileMode
	dirs, st, ok := c.flags(args, "m", 1, func(f, v string) error {
		switch f {
		case "-p", "--parents":
			parents = true
		case "-v", "--verbose":
			verbose = true
		case "-m", "--mode":
			m, err := parseMode(v, 0o755, true)
			if err != nil {
				return err
			}
			mode = m
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(dirs) == 0 {
		return c.errf(1, "missing operand")
	}
	status := 0
	for _, d := range dirs {
		if err := c.env.FS.Mkdir(c.ctx, c.abs(d), mode, parents); err != nil {
			c.errf(1, "cannot create directory %s: %s", quote(d), why(err))
			status = 1
			continue
		}
		if verbose {
			c.out.WriteString("mkdir: created directory " + quote(d) + "\n")
		}
	}
	return c.done(status)
}

// rmdirCmd removes empty directories: rmdir [-p] DIR...
func rmdirCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	parents := false
	dirs, st, ok := c.flags(args, "", 1, func(f, _ string) error {
		switch f {
		case "-p", "--parents":
			parents = true
		case "--ignore-fail-on-non-empty", "-v":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	status := 0
	for _, d := range dirs {
		for p := strings.TrimRight(d, "/"); p != "" && p != "."; p = path.Dir(p) {
			abs := c.abs(p)
			info, err := c.env.FS.Stat(c.ctx, abs)
			if err == nil && !info.IsDir() {
				err = &fs.PathError{Op: "rmdir", Path: abs, Err: vfs.ErrNotDir}
			}
			if err == nil {
				err = c.env.FS.Remove(c.ctx, abs, false)
			}
			if err != nil {
				c.errf(1, "failed to remove %s: %s", quote(p), why(err))
				status = 1
				break
			}
			if !parents || !strings.Contains(p, "/") {
				break
			}
		}
	}
	return c.done(status)
}

// rmCmd removes files: rm [-r] [-f] [-d] [-v] FILE...
func rmCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	recursive, force, dirs, verbose := false, false, false, false
	files, st, ok := c.flags(args, "", 1, func(f, _ string) error {
		switch f {
		case "-r", "-R", "--recursive":
			recursive = true
		case "-f", "--force":
			force = true
		case "-d", "--dir":
			dirs = true
		case "-v", "--verbose":
			verbose = true
		case "-i", "-I", "--interactive", "--preserve-root", "--one-file-system":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) == 0 && !force {
		return c.errf(1, "missing operand")
	}
	status := 0
	for _, f := range files {
		if b := path.Base(strings.TrimRight(f, "/")); b == "." || b == ".." {
			c.errf(1, "refusing to remove '.' or '..' directory: skipping %s", quote(f))
			status = 1
			continue
		}
		abs := c.abs(f)
		if abs == "/" {
			c.errf(1, "it is dangerous to operate recursively on '/'")
			status = 1
			continue
		}
		info, err := c.env.FS.Stat(c.ctx, abs)
		if err != nil {
			if force && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			c.errf(1, "cannot remove %s: %s", quote(f), why(err))
			status = 1
			continue
		}
		if info.IsDir() && !recursive && !dirs {
			c.errf(1, "cannot remove %s: Is a directory", quote(f))
			status = 1
			continue
		}
		if err := c.env.FS.Remove(c.ctx, abs, recursive); err != nil {
			c.errf(1, "cannot remove %s: %s", quote(f), why(err))
			status = 1
			continue
		}
		if verbose {
			kind := "removed "
			if info.IsDir() {
				kind = "removed directory "
			}
			c.out.WriteString(kind + quote(f) + "\n")
		}
	}
	return c.done(status)
}

// targetDir reports whether p names an existing directory.
func (c *cmd) isDir(p string) bool {
	info, err := c.env.FS.Stat(c.ctx, c.abs(p))
	return err == nil && info.IsDir()
}

// mvCmd moves files: mv [-f] [-n] [-v] [-T] SOURCE... DEST, or into a
// directory DEST.
func mvCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	noClobber, verbose, noTarget := false, false, false
	target := ""
	ops, st, ok := c.flags(args, "t", 1, func(f, v string) error {
		switch f {
		case "-f", "--force", "-i", "--interactive", "-u", "--update", "-b":
		case "-n", "--no-clobber":
			noClobber = true
		case "-v", "--verbose":
			verbose = true
		case "-T", "--no-target-directory":
			noTarget = true
		case "-t", "--target-directory":
			target = v
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	return c.moveOrCopy("mv", ops, target, noTarget, func(src, dst string, info *vfs.Info) error {
		if noClobber {
			if _, err := c.env.FS.Stat(c.ctx, c.abs(dst)); err == nil {
				return nil
			}
		}
		if err := c.env.FS.Rename(c.ctx, c.abs(src), c.abs(dst)); err != nil {
			return err
		}
		if verbose {
			c.out.WriteString("renamed " + quote(src) + " -> " + quote(dst) + "\n")
		}
		return nil
	})
}

// moveOrCopy resolves the operands of mv and cp (SOURCE DEST, SOURCE...
// DIR, -t DIR, -T) and calls fn for each source and its destination.
func (c *cmd) moveOrCopy(name string, ops []string, target string, noTarget bool, fn func(src, dst string, info *vfs.Info) error) int {
	var srcs []string
	switch {
	case target != "":
		srcs = ops
	case len(ops) < 2:
		if len(ops) == 0 {
			return c.errf(1, "missing file operand")
		}
		return c.errf(1, "missing destination file operand after %s", quote(ops[0]))
	default:
		srcs, target = ops[:len(ops)-1], ops[len(ops)-1]
	}
	into := !noTarget && c.isDir(target)
	if len(srcs) > 1 && !into {
		return c.errf(1, "target %s is not a directory", quote(target))
	}
	status := 0
	for _, s := range srcs {
		info, err := c.env.FS.Stat(c.ctx, c.abs(s))
		if err != nil {
			c.errf(1, "cannot stat %s: %s", quote(s), why(err))
			status = 1
			continue
		}
		dst := target
		if into {
			dst = strings.TrimRight(target, "/") + "/" + path.Base(strings.TrimRight(s, "/"))
			if target == "/" {
				dst = "/" + path.Base(s)
			}
		}
		if c.abs(s) == c.abs(dst) {
			c.errf(1, "%s and %s are the same file", quote(s), quote(dst))
			status = 1
			continue
		}
		if err := fn(s, dst, info); err != nil {
			if errors.Is(err, errReported) {
				status = 1
				continue
			}
			verb := "cannot move " + quote(s) + " to " + quote(dst)
			if name == "cp" {
				verb = "cannot create " + quote(dst)
			}
			c.errf(1, "%s: %s", verb, why(err))
			status = 1
		}
	}
	return c.done(status)
}

var errReported = errors.New("reported")

// cpCmd copies files: cp [-r] [-a] [-p] [-f] [-n] [-v] [-T] SOURCE...
// DEST, or into a directory DEST.
func cpCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	recursive, noClobber, verbose, noTarget := false, false, false, false
	target := ""
	ops, st, ok := c.flags(args, "t", 1, func(f, v string) error {
		switch f {
		case "-r", "-R", "--recursive":
			recursive = true
		case "-a", "--archive":
			recursive = true
		case "-f", "--force", "-i", "--interactive", "-p", "--preserve", "-u", "--update", "-L", "-P", "-d", "-b":
		case "-n", "--no-clobber":
			noClobber = true
		case "-v", "--verbose":
			verbose = true
		case "-T", "--no-target-directory":
			noTarget = true
		case "-t", "--target-directory":
			target = v
		default:
			if strings.HasPrefix(f, "--preserve") {
				return nil
			}
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	return c.moveOrCopy("cp", ops, target, noTarget, func(src, dst string, info *vfs.Info) error {
		if info.IsDir() && !recursive {
			c.errf(1, "-r not specified; omitting directory %s", quote(src))
			return errReported
		}
		existing, err := c.env.FS.Stat(c.ctx, c.abs(dst))
		if err == nil {
			if noClobber {
				return nil
			}
			if existing.IsDir() && info.IsDir() {
				// cp -r a b where b/ exists but a was named with -T: merge.
				return c.copyInto(src, dst, verbose)
			}
			if existing.IsDir() {
				c.errf(1, "cannot overwrite directory %s with non-directory", quote(dst))
				return errReported
			}
			if info.IsDir() {
				c.errf(1, "cannot overwrite non-directory %s with directory %s", quote(dst), quote(src))
				return errReported
			}
		}
		if err := c.env.FS.Copy(c.ctx, c.abs(src), c.abs(dst)); err != nil {
			return err
		}
		if verbose {
			c.out.WriteString(quote(src) + " -> " + quote(dst) + "\n")
		}
		return nil
	})
}

// copyInto copies the entries of directory src into the existing
// directory dst.
func (c *cmd) copyInto(src, dst string, verbose bool) error {
	infos, err := c.env.FS.ReadDir(c.ctx, c.abs(src))
	if err != nil {
		return err
	}
	for _, i := range infos {
		s, d := src+"/"+i.Name(), dst+"/"+i.Name()
		existing, err := c.env.FS.Stat(c.ctx, c.abs(d))
		if err == nil && existing.IsDir() && i.IsDir() {
			if err := c.copyInto(s, d, verbose); err != nil {
				return err
			}
			continue
		}
		if err == nil {
			if err := c.env.FS.Remove(c.ctx, c.abs(d), true); err != nil {
				return err
			}
		}
		if err := c.env.FS.Copy(c.ctx, c.abs(s), c.abs(d)); err != nil {
			return err
		}
		if verbose {
			c.out.WriteString(quote(s) + " -> " + quote(d) + "\n")
		}
	}
	return nil
}

// touchCmd creates files or updates their times: touch [-c] [-d DATE]
// FILE...
func touchCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	noCreate := false
	var when time.Time
	var badDate error
	files, st, ok := c.flags(args, "dtr", 1, func(f, v string) error {
		switch f {
		case "-c", "--no-create":
			noCreate = true
		case "-a", "-m", "-h", "--no-dereference":
		case "-d", "--date":
			t, err := parseDate(v, c.now())
			if err != nil {
				badDate = fmt.Errorf("invalid date format %s", quote(v))
			}
			when = t
		case "-t":
			t, err := time.ParseInLocation("200601021504.05", touchStamp(v), time.UTC)
			if err != nil {
				badDate = fmt.Errorf("invalid date format %s", quote(v))
			}
			when = t
		case "-r", "--reference":
			info, err := c.env.FS.Stat(c.ctx, c.abs(v))
			if err != nil {
				badDate = fmt.Errorf("failed to get attributes of %s: %s", quote(v), why(err))
				return nil
			}
			when = info.ModTime()
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if badDate != nil {
		return c.errf(1, "%v", badDate)
	}
	if len(files) == 0 {
		return c.errf(1, "missing file operand")
	}
	status := 0
	for _, f := range files {
		if err := c.env.FS.Touch(c.ctx, c.abs(f), when, noCreate); err != nil {
			c.errf(1, "cannot touch %s: %s", quote(f), why(err))
			status = 1
		}
	}
	return c.done(status)
}

// touchStamp completes a touch -t [[CC]YY]MMDDhhmm[.ss] stamp to
// CCYYMMDDhhmm.ss.
func touchStamp(v string) string {
	sec := ".00"
	if i := strings.IndexByte(v, '.'); i >= 0 {
		v, sec = v[:i], v[i:]
	}
	switch len(v) {
	case 8:
		v = "2026" + v
	case 10:
		v = "20" + v
	}
	return v + sec
}

// chmodCmd changes modes: chmod [-R] MODE FILE...
func chmodCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	recursive := false
	// A symbolic mode such as -x looks like a flag: take it as the mode.
	var mode string
	var rest []string
	for _, a := range args {
		switch {
		case a == "-R" || a == "--recursive":
			recursive = true
		case a == "-v" || a == "-f" || a == "-c" || a == "--verbose" || a == "--silent" || a == "--quiet":
		case mode == "":
			mode = a
		default:
			rest = append(rest, a)
		}
	}
	if mode == "" || len(rest) == 0 {
		return c.errf(1, "missing operand")
	}
	status := 0
	apply := func(p, abs string, info *vfs.Info) {
		m, err := parseMode(mode, info.Mode(), info.IsDir())
		if err == nil {
			err = c.env.FS.Chmod(c.ctx, abs, m)
		}
		if err != nil {
			c.errf(1, "changing permissions of %s: %s", quote(p), why(err))
			status = 1
		}
	}
	for _, f := range rest {
		if !recursive {
			info, err := c.env.FS.Stat(c.ctx, c.abs(f))
			if err != nil {
				c.errf(1, "cannot access %s: %s", quote(f), why(err))
				status = 1
				continue
			}
			apply(f, c.abs(f), info)
			continue
		}
		c.walk(f, func(p, abs string, info *vfs.Info, depth int) error {
			apply(p, abs, info)
			return nil
		}, func(p string, err error) {
			c.errf(1, "cannot access %s: %s", quote(p), why(err))
			status = 1
		})
	}
	return c.done(status)
}

// lnCmd refuses: the sandbox's file system has no links.
func lnCmd(c *cmd, args []string) int {
	return c.errf(1, "links are not supported in the sandbox; copy the file with cp instead")
}

// realpathCmd prints absolute paths: realpath [-e|-m] [-s]
// [--relative-to=DIR] FILE... (readlink -f is the same).
func realpathCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	mustExist, relTo := false, ""
	files, st, ok := c.flags(args, "", 1, func(f, v string) error {
		switch f {
		case "-e", "--canonicalize-existing":
			mustExist = true
		case "-m", "--canonicalize-missing", "-s", "--strip", "--no-symlinks", "-q", "--quiet", "-L", "-P", "-z":
		case "-f", "--canonicalize":
		case "--relative-to":
			relTo = v
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) == 0 {
		return c.errf(1, "missing operand")
	}
	status := 0
	for _, f := range files {
		abs := c.abs(f)
		if mustExist {
			if _, err := c.env.FS.Stat(c.ctx, abs); err != nil {
				c.errf(1, "%s: %s", f, why(err))
				status = 1
				continue
			}
		} else if _, err := c.env.FS.Stat(c.ctx, path.Dir(abs)); err != nil && c.name == "realpath" {
			c.errf(1, "%s: %s", f, why(err))
			status = 1
			continue
		}
		if relTo != "" {
			abs = relPath(c.abs(relTo), abs)
		}
		c.out.WriteString(abs + "\n")
	}
	return c.done(status)
}

// relPath is the path of target relative to dir (both absolute, clean).
func relPath(dir, target string) string {
	if dir == target {
		return "."
	}
	split := func(p string) []string {
		if p == "/" {
			return nil
		}
		return strings.Split(p[1:], "/")
	}
	d, t := split(dir), split(target)
	i := 0
	for i < len(d) && i < len(t) && d[i] == t[i] {
		i++
	}
	parts := slices.Repeat([]string{".."}, len(d)-i)
	parts = append(parts, t[i:]...)
	return strings.Join(parts, "/")
}

// readlinkCmd prints the target of a link; there are none, so only -f
// (canonicalize) succeeds.
func readlinkCmd(c *cmd, args []string) int {
	for _, a := range args {
		if a == "-f" || a == "-e" || a == "-m" || a == "--canonicalize" {
			return realpathCmd(c, args)
		}
	}
	return c.done(1)
}

// mktempCmd creates a temporary file or directory: mktemp [-d] [-u]
// [-p DIR] [-t] [--suffix=S] [TEMPLATE]. Names are drawn from a counter,
// so a script's names are the same on every run.
func mktempCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	dir, dryRun, tmpdir, suffix := false, false, "", ""
	useTmp := false
	ops, st, ok := c.flags(args, "p", 1, func(f, v string) error {
		switch f {
		case "-d", "--directory":
			dir = true
		case "-u", "--dry-run":
			dryRun = true
		case "-q", "--quiet":
		case "-t":
			useTmp = true
		case "-p", "--tmpdir":
			tmpdir = v
			useTmp = true
		case "--suffix":
			suffix = v
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	template := "tmp.XXXXXXXXXX"
	if len(ops) > 0 {
		template = ops[0]
	} else {
		useTmp = true
	}
	if useTmp && !strings.Contains(template, "/") {
		if tmpdir == "" {
			tmpdir = "/tmp"
		}
		template = strings.TrimRight(tmpdir, "/") + "/" + template
	}
	x := len(template) - len(strings.TrimRight(template, "X"))
	if x < 3 {
		return c.errf(1, "too few X's in template %s", quote(template))
	}
	for try := range 100 {
		p := template[:len(template)-x] + tempName(x, try) + suffix
		if _, err := c.env.FS.Stat(c.ctx, c.abs(p)); err == nil {
			continue
		}
		if !dryRun {
			var err error
			if dir {
				err = c.env.FS.Mkdir(c.ctx, c.abs(p), 0o700, false)
			} else {
				err = c.env.FS.WriteFile(c.ctx, c.abs(p), nil, 0o600)
			}
			if err != nil {
				return c.errf(1, "failed to create %s via template %s: %s", map[bool]string{true: "directory", false: "file"}[dir], quote(template), why(err))
			}
		}
		c.out.WriteString(p + "\n")
		return c.done(0)
	}
	return c.errf(1, "failed to create a unique name from template %s", quote(template))
}

// tempName is the n-character name of attempt try: letters and digits
// from a fixed sequence.
func tempName(n, try int) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	h := uint64(try+1)*0x9E3779B97F4A7C15 ^ 0xD1B54A32D192ED03
	b := make([]byte, n)
	for i := range b {
		h ^= h >> 31
		h *= 0xBF58476D1CE4E5B9
		b[i] = chars[h%uint64(len(chars))]
	}
	return string(b)
}

// statCmd describes files: stat [-c FORMAT | --printf FORMAT] [-t] FILE...
func statCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	format, printf := "", false
	terse := false
	files, st, ok := c.flags(args, "c", 1, func(f, v string) error {
		switch f {
		case "-c", "--format":
			format = v
		case "--printf":
			format, printf = v, true
		case "-t", "--terse":
			terse = true
		case "-L", "--dereference", "-f":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) == 0 {
		return c.errf(1, "missing operand")
	}
	status := 0
	for _, f := range files {
		info, err := c.env.FS.Stat(c.ctx, c.abs(f))
		if err != nil {
			c.errf(1, "cannot statx %s: %s", quote(f), why(err))
			status = 1
			continue
		}
		switch {
		case format != "":
			s := c.statFormat(format, f, info)
			if printf {
				s = unescapeC(s)
			} else {
				s += "\n"
			}
			c.out.WriteString(s)
		case terse:
			c.out.WriteString(c.statFormat("%n %s %b %f %u %g 0 1 1 0 0 %X %Y %Z %W 4096", f, info) + "\n")
		default:
			c.out.WriteString(c.statFormat("  File: %n\n  Size: %-10s\tBlocks: %-10b IO Block: 4096   %F\n"+
				"Access: (%a/%A)  Uid: ( 1000/%U)   Gid: ( 1000/%G)\nModify: %y\n", f, info))
		}
	}
	return c.done(status)
}

// statFormat expands stat's % directives.
func (c *cmd) statFormat(format, name string, info *vfs.Info) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' || i+1 >= len(format) {
			b.WriteByte(ch)
			continue
		}
		// Flags and width, as printf.
		j := i + 1
		for j < len(format) && strings.IndexByte("-0123456789", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			b.WriteString(format[i:])
			break
		}
		spec := format[i+1 : j]
		var v string
		switch format[j] {
		case 'n':
			v = name
		case 'N':
			v = "'" + name + "'"
		case 's':
			v = strconv.FormatInt(info.Size(), 10)
		case 'b':
			v = strconv.FormatInt(diskBlocks(info)*2, 10)
		case 'B':
			v = "512"
		case 'F':
			switch {
			case info.IsDir():
				v = "directory"
			case info.Mode()&fs.ModeCharDevice != 0:
				v = "character special file"
			case info.Size() == 0:
				v = "regular empty file"
			default:
				v = "regular file"
			}
		case 'a':
			v = strconv.FormatUint(uint64(info.Mode().Perm()), 8)
		case 'A':
			v = modeString(info.Mode())
		case 'f':
			v = strconv.FormatUint(uint64(info.Mode().Perm()), 16)
		case 'U', 'G':
			v = c.user()
		case 'u', 'g':
			v = "1000"
		case 'i':
			v = "1"
		case 'h':
			v = "1"
		case 'y', 'z', 'x', 'w':
			v = info.ModTime().Format("2006-01-02 15:04:05.000000000 -0700")
		case 'Y', 'Z', 'X', 'W':
			v = strconv.FormatInt(info.ModTime().Unix(), 10)
		case '%':
			v = "%"
		default:
			v = "?"
		}
		if spec != "" {
			if w, err := strconv.Atoi(strings.TrimLeft(spec, "-0")); err == nil {
				if strings.HasPrefix(spec, "-") {
					v = fmt.Sprintf("%-*s", w, v)
				} else {
					v = fmt.Sprintf("%*s", w, v)
				}
			}
		}
		b.WriteString(v)
		i = j
	}
	return b.String()
}

// unescapeC expands \n, \t, \\ and \NNN as stat --printf does.
func unescapeC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\':
			b.WriteByte('\\')
		case '"':
			b.WriteByte('"')
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// duCmd reports disk use: du [-s] [-h] [-a] [-c] [-b] [-k] [-d N] [FILE]...
func duCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	summarize, human, all, total, apparent := false, false, false, false, false
	maxDepth := -1
	files, st, ok := c.flags(args, "d", 1, func(f, v string) error {
		switch f {
		case "-s", "--summarize":
			summarize = true
		case "-h", "--human-readable":
			human = true
		case "-a", "--all":
			all = true
		case "-c", "--total":
			total = true
		case "-b", "--bytes":
			apparent = true
		case "--apparent-size":
			apparent = true
		case "-k", "-x", "-L", "-P", "-l":
		case "-d", "--max-depth":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("invalid maximum depth %s", quote(v))
			}
			maxDepth = n
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if summarize {
		maxDepth = 0
	}
	if len(files) == 0 {
		files = []string{"."}
	}
	size := func(i *vfs.Info) int64 {
		if apparent {
			return i.Size()
		}
		return diskBlocks(i)
	}
	show := func(n int64, p string) {
		switch {
		case human && apparent:
			c.out.WriteString(humanSize(n))
		case human:
			c.out.WriteString(humanSize(n * 1024))
		default:
			c.out.WriteString(strconv.FormatInt(n, 10))
		}
		c.out.WriteString("\t" + p + "\n")
	}
	status := 0
	var grand int64
	for _, f := range files {
		// Sizes of directories are known after their entries: collect the
		// walk, then sum bottom-up.
		type item struct {
			p     string
			depth int
			dir   bool
			size  int64
		}
		var items []item
		c.walk(f, func(p, abs string, info *vfs.Info, depth int) error {
			items = append(items, item{p, depth, info.IsDir(), size(info)})
			return nil
		}, func(p string, err error) {
			c.errf(1, "cannot access %s: %s", quote(p), why(err))
			status = 1
		})
		// Each directory's total is its own size plus its descendants';
		// a stack of open directories accumulates them.
		sums := make([]int64, len(items))
		var stack []int
		for i, it := range items {
			for len(stack) > 0 && items[stack[len(stack)-1]].depth >= it.depth {
				stack = stack[:len(stack)-1]
			}
			sums[i] = it.size
			for _, s := range stack {
				sums[s] += it.size
			}
			if it.dir {
				stack = append(stack, i)
			}
		}
		// Print in post-order: entries before their directory.
		var order []int
		var post func(i int) int
		post = func(i int) int {
			j := i + 1
			for j < len(items) && items[j].depth > items[i].depth {
				j = post(j)
			}
			order = append(order, i)
			return j
		}
		if len(items) > 0 {
			post(0)
		}
		for _, i := range order {
			it := items[i]
			if maxDepth >= 0 && it.depth > maxDepth {
				continue
			}
			if !it.dir && !all && it.depth > 0 {
				continue
			}
			show(sums[i], it.p)
		}
		if len(items) > 0 {
			grand += sums[0]
		}
	}
	if total {
		show(grand, "total")
	}
	return c.done(status)
}
