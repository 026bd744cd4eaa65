package coreutils

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// tarValueFlags are the short flags of tar that take a value; in the old
// style ("tar czf out.tgz dir") their values follow the cluster in order.
const tarValueFlags = "fCXTbN"

// tarLongValue are the long options that take a value, which GNU tar also
// accepts as the next argument ("--exclude node_modules").
var tarLongValue = map[string]bool{
	"--file": true, "--directory": true, "--exclude": true, "--strip-components": true,
	"--transform": true, "--owner": true, "--group": true, "--mtime": true, "--sort": true,
	"--format": true, "--mode": true, "--files-from": true, "--exclude-from": true,
}

// tarOpts are tar's settings.
type tarOpts struct {
	mode        byte // 'c', 'x', 't'
	file        string
	dir         string
	gzip, bz2   bool
	verbose     int
	toStdout    bool
	keepOld     bool
	noMtime     bool
	absolute    bool
	strip       int
	excludes    []string
	filesFrom   []string
	ugswidth    int // the growing width of -tv's "user/group size" column
	verboseDest io.Writer
}

// tarCmd archives files: tar -c|-x|-t [-z -j -v -O -k -m -P] [-f ARCHIVE]
// [-C DIR] [--exclude=PATTERN] [--strip-components=N] [FILE]...; the old
// style "tar czf out.tgz dir" is accepted too. Reading, gzip and bzip2
// archives are recognized by their first bytes; writing, -z (or -a with an
// archive named .tgz or .gz) compresses with gzip.
func tarCmd(c *cmd, args []string) int {
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		// Old style: the first argument is a cluster of letters, whose
		// values follow it in order.
		cluster, rest := args[0], args[1:]
		var expanded []string
		for _, l := range cluster {
			expanded = append(expanded, "-"+string(l))
			if strings.ContainsRune(tarValueFlags, l) && len(rest) > 0 {
				expanded = append(expanded, rest[0])
				rest = rest[1:]
			}
		}
		args = append(expanded, rest...)
	}
	var joined []string
	for i := 0; i < len(args); i++ {
		if tarLongValue[args[i]] && i+1 < len(args) {
			joined = append(joined, args[i]+"="+args[i+1])
			i++
			continue
		}
		joined = append(joined, args[i])
	}
	o := tarOpts{ugswidth: 19}
	auto := false
	setMode := func(m byte) error {
		if o.mode != 0 && o.mode != m {
			return gnuMsg("You may not specify more than one '-Acdtrux', '--delete' or  '--test-label' option")
		}
		o.mode = m
		return nil
	}
	files, st, ok := c.flags(joined, tarValueFlags, 2, func(f, v string) error {
		switch f {
		case "-c", "--create":
			return setMode('c')
		case "-x", "--extract", "--get":
			return setMode('x')
		case "-t", "--list":
			return setMode('t')
		case "-f", "--file":
			o.file = v
		case "-C", "--directory":
			o.dir = v
		case "-z", "--gzip", "--gunzip", "--ungzip":
			o.gzip = true
		case "-j", "--bzip2":
			o.bz2 = true
		case "-a", "--auto-compress":
			auto = true
		case "-v", "--verbose":
			o.verbose++
		case "-O", "--to-stdout":
			o.toStdout = true
		case "-k", "--keep-old-files", "--skip-old-files":
			o.keepOld = true
		case "-m", "--touch":
			o.noMtime = true
		case "-P", "--absolute-names":
			o.absolute = true
		case "--exclude":
			o.excludes = append(o.excludes, v)
		case "-T", "--files-from":
			data, err := c.readFile(v)
			if err != nil {
				return fmt.Errorf("%s: Cannot open: %s", v, why(err))
			}
			o.filesFrom = append(o.filesFrom, splitLines(string(data))...)
		case "-X", "--exclude-from":
			data, err := c.readFile(v)
			if err != nil {
				return fmt.Errorf("%s: Cannot open: %s", v, why(err))
			}
			o.excludes = append(o.excludes, splitLines(string(data))...)
		case "--strip-components":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return gnuMsg("Invalid number of elements: " + quote(v))
			}
			o.strip = n
		case "-p", "--preserve-permissions", "--same-permissions", "--no-same-owner", "--same-owner",
			"--numeric-owner", "--overwrite", "--wildcards", "--no-wildcards", "--anchored", "--no-anchored",
			"--recursion", "-h", "--dereference", "--owner", "--group", "--mode", "--format", "--sort",
			"--mtime", "-b", "--blocking-factor", "--no-xattrs", "--no-acls", "--no-selinux", "-o", "--no-same-permissions",
			"-U", "--unlink-first", "--warning", "--full-time", "--delay-directory-restore":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if o.mode == 0 {
		return c.errf(2, "You must specify one of the '-Acdtrux', '--delete' or '--test-label' options\nTry 'tar --help' or 'tar --usage' for more information.")
	}
	if auto && o.mode == 'c' && (strings.HasSuffix(o.file, ".gz") || strings.HasSuffix(o.file, ".tgz")) {
		o.gzip = true
	}
	if o.file == "" {
		o.file = "-"
	}
	if (o.file != "-" || o.dir != "" || o.mode != 't') && !c.needFS() {
		return 2
	}
	o.verboseDest = c.out
	if o.mode == 'c' && o.file == "-" {
		o.verboseDest = c.env.Stderr
	}
	files = append(files, o.filesFrom...)
	switch o.mode {
	case 'c':
		return c.tarCreate(&o, files)
	default:
		return c.tarRead(&o, files)
	}
}

// tarBase is the directory member paths are relative to (-C).
func (c *cmd) tarBase(o *tarOpts) string {
	if o.dir == "" {
		return c.abs(".")
	}
	return c.abs(o.dir)
}

// tarExcluded reports whether a member name matches an --exclude pattern
// (a glob matched against the whole name and each of its base names, as
// GNU tar does by default).
func tarExcluded(o *tarOpts, name string) bool {
	name = strings.TrimSuffix(name, "/")
	for _, pat := range o.excludes {
		pat = strings.TrimSuffix(pat, "/")
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
		for p := name; ; {
			i := strings.IndexByte(p, '/')
			if i < 0 {
				break
			}
			p = p[i+1:]
			if ok, _ := path.Match(pat, p); ok {
				return true
			}
		}
		if ok, _ := path.Match(pat, path.Base(name)); ok {
			return true
		}
	}
	return false
}

// tarCreate writes an archive of files (-c).
func (c *cmd) tarCreate(o *tarOpts, files []string) int {
	if len(files) == 0 {
		return c.errf(2, "Cowardly refusing to create an empty archive\nTry 'tar --help' or 'tar --usage' for more information.")
	}
	var sink io.Writer = c.out
	var fileOut *vfs.File
	if o.file != "-" {
		f, err := c.env.FS.Open(c.ctx, c.abs(o.file), vfs.O_WRONLY|vfs.O_CREATE|vfs.O_TRUNC, 0o644)
		if err != nil {
			return c.errf(2, "%s: Cannot open: %s", o.file, why(err))
		}
		fileOut = f
		sink = bufio.NewWriterSize(f, 32*1024)
	}
	var zw *gzip.Writer
	w := sink
	if o.gzip {
		zw = gzip.NewWriter(sink)
		w = zw
	}
	tw := tar.NewWriter(w)
	status := 0
	archiveAbs := ""
	if fileOut != nil {
		archiveAbs = c.abs(o.file)
	}
	base := c.tarBase(o)
	user := c.user()
	var writeErr error
	for _, name := range files {
		if c.stopped() {
			writeErr = errStopped
			break
		}
		member := name
		if !o.absolute && strings.HasPrefix(member, "/") {
			member = strings.TrimLeft(member, "/")
			fmt.Fprintf(c.env.Stderr, "tar: Removing leading `/' from member names\n")
			if member == "" {
				member = "."
			}
		}
		src := vfs.Abs(base, name)
		if _, err := c.env.FS.Stat(c.ctx, src); err != nil {
			c.errf(2, "%s: Cannot stat: %s", name, why(err))
			status = 2
			continue
		}
		err := c.walk(src, func(p, abs string, info *vfs.Info, depth int) error {
			if abs == archiveAbs {
				fmt.Fprintf(c.env.Stderr, "tar: %s: file is the archive; not dumped\n", strings.Replace(p, src, member, 1))
				return nil
			}
			rel := member + strings.TrimPrefix(p, src)
			if tarExcluded(o, rel) {
				return errSkipDir
			}
			hdr := &tar.Header{
				Name:    rel,
				Mode:    int64(info.Mode().Perm()),
				ModTime: info.ModTime().Truncate(time.Second),
				Uname:   user,
				Gname:   user,
				Uid:     1000,
				Gid:     1000,
				Format:  tar.FormatGNU,
			}
			var data []byte
			if info.IsDir() {
				hdr.Typeflag = tar.TypeDir
				if !strings.HasSuffix(hdr.Name, "/") {
					hdr.Name += "/"
				}
			} else {
				d, err := c.env.FS.ReadFile(c.ctx, abs)
				if err != nil {
					c.errf(2, "%s: Cannot open: %s", rel, why(err))
					status = 2
					return nil
				}
				data = d
				hdr.Typeflag = tar.TypeReg
				hdr.Size = int64(len(d))
			}
			if o.verbose > 0 {
				fmt.Fprintln(o.verboseDest, c.tarVerboseLine(o, hdr))
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
			return nil
		}, func(p string, err error) {
			c.errf(2, "%s: Cannot open: %s", p, why(err))
			status = 2
		})
		if err != nil {
			writeErr = err
			break
		}
	}
	if writeErr == nil {
		writeErr = tw.Close()
	}
	if zw != nil && writeErr == nil {
		writeErr = zw.Close()
	}
	if bw, ok := sink.(*bufio.Writer); ok && writeErr == nil {
		writeErr = bw.Flush()
	}
	if fileOut != nil {
		if err := fileOut.Close(); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	if writeErr != nil {
		if c.stopped() {
			return c.errf(2, "interrupted")
		}
		return c.errf(2, "%s: Cannot write: %s", o.file, why(writeErr))
	}
	if status != 0 {
		c.errf(2, "Exiting with failure status due to previous errors")
	}
	return c.done(status)
}

// tarVerboseLine is a member's line of -v: its name, or with -vv (and
// always for -tv) "mode user/group size date time name", as GNU tar.
func (c *cmd) tarVerboseLine(o *tarOpts, hdr *tar.Header) string {
	if o.verbose < 2 && o.mode != 't' || o.verbose == 0 {
		return hdr.Name
	}
	mode := fs.FileMode(hdr.Mode).Perm()
	if hdr.Typeflag == tar.TypeDir {
		mode |= fs.ModeDir
	}
	ms := modeString(mode)
	switch hdr.Typeflag {
	case tar.TypeSymlink:
		ms = "l" + ms[1:]
	case tar.TypeLink:
		ms = "h" + ms[1:]
	}
	u, g := hdr.Uname, hdr.Gname
	if u == "" {
		u = strconv.Itoa(hdr.Uid)
	}
	if g == "" {
		g = strconv.Itoa(hdr.Gid)
	}
	ug := u + "/" + g
	size := strconv.FormatInt(hdr.Size, 10)
	pad := o.ugswidth - len(ug) - len(size)
	if pad < 1 {
		o.ugswidth += 1 - pad
		pad = 1
	}
	line := ms + " " + ug + strings.Repeat(" ", pad) + size + " " + hdr.ModTime.In(time.UTC).Format("2006-01-02 15:04") + " " + hdr.Name
	if hdr.Typeflag == tar.TypeSymlink {
		line += " -> " + hdr.Linkname
	} else if hdr.Typeflag == tar.TypeLink {
		line += " link to " + hdr.Linkname
	}
	return line
}

// tarOpenArchive returns a reader of the archive's (decompressed) bytes.
func (c *cmd) tarOpenArchive(o *tarOpts) (io.Reader, int, bool) {
	var raw io.Reader
	if o.file == "-" {
		raw = c.in
	} else {
		data, err := c.readFile(o.file)
		if err != nil {
			return nil, c.errf(2, "%s: Cannot open: %s\ntar: Error is not recoverable: exiting now", o.file, why(err)), false
		}
		raw = bytes.NewReader(data)
	}
	br := bufio.NewReader(raw)
	magic, _ := br.Peek(3)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, c.errf(2, "This does not look like a tar archive"), false
		}
		return zr, 0, true
	case len(magic) == 3 && string(magic) == "BZh":
		return bzip2.NewReader(br), 0, true
	case o.gzip:
		return nil, c.errf(2, "This does not look like a tar archive\n\ngzip: stdin: not in gzip format\ntar: Child returned status 1\ntar: Error is not recoverable: exiting now"), false
	}
	return br, 0, true
}

// tarMemberSelected reports whether a member is named by the operands
// (a member or a directory above it), or there are none.
func tarMemberSelected(name string, wanted []string, found []bool) bool {
	if len(wanted) == 0 {
		return true
	}
	n := strings.TrimSuffix(name, "/")
	for i, w := range wanted {
		w = strings.TrimSuffix(w, "/")
		ok, _ := path.Match(w, n)
		if n == w || strings.HasPrefix(n, w+"/") || ok {
			found[i] = true
			return true
		}
	}
	return false
}

// tarRead lists (-t) or extracts (-x) an archive.
func (c *cmd) tarRead(o *tarOpts, wanted []string) int {
	r, st, ok := c.tarOpenArchive(o)
	if !ok {
		return st
	}
	tr := tar.NewReader(r)
	found := make([]bool, len(wanted))
	base := c.tarBase(o)
	if o.mode == 'x' && o.dir != "" {
		if info, err := c.env.FS.Stat(c.ctx, base); err != nil || !info.IsDir() {
			if err == nil {
				err = vfs.ErrNotDir
			}
			return c.errf(2, "%s: Cannot open: %s\ntar: Error is not recoverable: exiting now", o.dir, why(err))
		}
	}
	status := 0
	type dirTime struct {
		abs string
		t   time.Time
	}
	var dirTimes []dirTime
	members := 0
	for {
		if c.stopped() {
			return c.errf(2, "interrupted")
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, errInputTooLarge) {
				return c.readErr(err)
			}
			if members == 0 {
				return c.errf(2, "This does not look like a tar archive\ntar: Exiting with failure status due to previous errors")
			}
			return c.errf(2, "Unexpected EOF in archive\ntar: Error is not recoverable: exiting now")
		}
		members++
		name := hdr.Name
		if !tarMemberSelected(name, wanted, found) || tarExcluded(o, name) {
			continue
		}
		if o.strip > 0 {
			parts := strings.Split(strings.TrimSuffix(name, "/"), "/")
			if len(parts) <= o.strip {
				continue
			}
			name = strings.Join(parts[o.strip:], "/")
			if hdr.Typeflag == tar.TypeDir {
				name += "/"
			}
		}
		if o.mode == 't' {
			shown := *hdr
			shown.Name = name
			if o.verbose > 0 {
				c.out.WriteString(c.tarVerboseLine(o, &shown) + "\n")
			} else {
				c.out.WriteString(name + "\n")
			}
			continue
		}
		if o.verbose > 0 && !o.toStdout {
			shown := *hdr
			shown.Name = name
			fmt.Fprintln(o.verboseDest, c.tarVerboseLine(o, &shown))
		}
		if o.toStdout {
			if hdr.Typeflag == tar.TypeReg {
				if _, err := io.Copy(c.out, tr); err != nil {
					if c.stopped() {
						return c.errf(2, "interrupted")
					}
					return c.errf(2, "%s: %v", name, err)
				}
			}
			continue
		}
		clean := path.Clean(name)
		if strings.HasPrefix(name, "/") && !o.absolute {
			clean = strings.TrimLeft(clean, "/")
			if clean == "" {
				continue
			}
		}
		if clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(clean, "/../") || strings.HasSuffix(clean, "/..") {
			c.errf(2, "%s: Member name contains '..'", name)
			status = 2
			continue
		}
		abs := vfs.Abs(base, clean)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := c.env.FS.Mkdir(c.ctx, abs, fs.FileMode(hdr.Mode).Perm()|0o700, true); err != nil && !errors.Is(err, fs.ErrExist) {
				c.errf(2, "%s: Cannot mkdir: %s", name, why(err))
				status = 2
				continue
			}
			if !o.noMtime {
				dirTimes = append(dirTimes, dirTime{abs, hdr.ModTime})
			}
		case tar.TypeReg, tar.TypeSymlink, tar.TypeLink:
			if o.keepOld {
				if _, err := c.env.FS.Stat(c.ctx, abs); err == nil {
					continue
				}
			}
			if err := c.env.FS.Mkdir(c.ctx, path.Dir(abs), 0o755, true); err != nil && !errors.Is(err, fs.ErrExist) {
				c.errf(2, "%s: Cannot mkdir: %s", name, why(err))
				status = 2
				continue
			}
			if hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink {
				// The sandbox has no links: the member becomes a copy of
				// its target when the archive held it before.
				target := hdr.Linkname
				if hdr.Typeflag == tar.TypeSymlink {
					target = path.Join(path.Dir(clean), target)
				}
				if err := c.env.FS.Copy(c.ctx, vfs.Abs(base, target), abs); err != nil {
					c.errf(2, "%s: Cannot create link to %s: %s", name, quote(hdr.Linkname), why(err))
					status = 2
				}
				continue
			}
			f, err := c.env.FS.Open(c.ctx, abs, vfs.O_WRONLY|vfs.O_CREATE|vfs.O_TRUNC, fs.FileMode(hdr.Mode).Perm())
			if err != nil {
				c.errf(2, "%s: Cannot open: %s", name, why(err))
				status = 2
				continue
			}
			_, werr := io.Copy(f, tr)
			cerr := f.Close()
			if werr == nil {
				werr = cerr
			}
			if werr != nil {
				if c.stopped() {
					return c.errf(2, "interrupted")
				}
				c.errf(2, "%s: Cannot write: %s", name, why(werr))
				status = 2
				continue
			}
			c.env.FS.Chmod(c.ctx, abs, fs.FileMode(hdr.Mode).Perm())
			if !o.noMtime {
				c.env.FS.Touch(c.ctx, abs, hdr.ModTime, true)
			}
		default:
			// Devices, fifos and the like have no place in the sandbox.
			fmt.Fprintf(c.env.Stderr, "tar: %s: Cannot create: unsupported member type %q\n", name, string(hdr.Typeflag))
			status = 2
		}
	}
	for i := len(dirTimes) - 1; i >= 0; i-- {
		c.env.FS.Touch(c.ctx, dirTimes[i].abs, dirTimes[i].t, true)
	}
	for i, w := range wanted {
		if !found[i] {
			c.errf(2, "%s: Not found in archive", w)
			status = 2
		}
	}
	if status != 0 {
		c.errf(2, "Exiting with failure status due to previous errors")
	}
	return c.done(status)
}

// gnuMsg is an error whose text is a GNU tool's own message, capitalized
// as the tool prints it.
type gnuMsg string

func (m gnuMsg) Error() string { return string(m) }
