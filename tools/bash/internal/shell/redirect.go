package shell

import (
	"errors"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// redirect performs redirections. Unless permanent (exec), they apply to
// a copy of the descriptors that restore drops. A failed redirection is
// reported ("bash: f: No such file or directory") and ok is false.
func (sh *shell) redirect(redirs []*syntax.Redirect, permanent bool) (restore func(), ok bool) {
	if len(redirs) == 0 {
		return noRestore, true
	}
	old := sh.fds
	if !permanent {
		sh.fds = old.clone()
	}
	sh.keptFDs = sh.keptFDs[:0]
	sh.movedFDs = sh.movedFDs[:0]
	for _, rd := range redirs {
		if !sh.redirect1(rd, permanent) {
			if !permanent {
				sh.fds.closeAll()
				sh.fds = old
			}
			return noRestore, false
		}
	}
	if permanent {
		return noRestore, true
	}
	kept := append([]int(nil), sh.keptFDs...)
	return func() {
		// {var}> descriptors outlive the command
		for _, fd := range kept {
			if f := sh.fds.get(fd); f != nil {
				old.set(fd, f.ref())
			}
		}
		sh.fds.closeAll()
		sh.fds = old
	}, true
}

func noRestore() {}

// redirect1 performs one redirection on sh.fds.
func (sh *shell) redirect1(rd *syntax.Redirect, permanent bool) bool {
	fd := -1
	varName := ""
	if rd.N != nil {
		if strings.HasPrefix(rd.N.Value, "{") {
			varName = strings.TrimSuffix(strings.TrimPrefix(rd.N.Value, "{"), "}")
		} else {
			n, err := strconv.Atoi(rd.N.Value)
			if err != nil {
				sh.errorf("%s: bad file descriptor", rd.N.Value)
				return false
			}
			fd = n
		}
	}
	if fd < 0 && varName == "" {
		switch rd.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			fd = 0
		default:
			fd = 1
		}
	}
	// {var}>&- closes the fd the variable holds
	if varName != "" && (rd.Op == syntax.DplOut || rd.Op == syntax.DplIn) && sh.expandString(rd.Word) == "-" {
		n, err := strconv.Atoi(sh.value(varName))
		if err != nil {
			sh.errorf("%s: ambiguous redirect", varName)
			return false
		}
		sh.fds.close(n)
		return true
	}
	if varName != "" {
		if !validName(varName) {
			sh.errorf("{%s}: invalid variable name", varName)
			return false
		}
		fd = sh.fds.freeFD(10)
	}
	f, ok := sh.redirTarget(rd, fd)
	if !ok {
		return false
	}
	if f == nil { // closed
		sh.fds.close(fd)
	} else if f != nil {
		if rd.Op == syntax.RdrAll || rd.Op == syntax.AppAll {
			sh.fds.set(1, f)
			sh.fds.set(2, f.ref())
		} else {
			sh.fds.set(fd, f)
		}
	}
	if varName != "" {
		if err := sh.setString(varName, strconv.Itoa(fd), false); err != nil {
			sh.fatal(err)
		}
		sh.keptFDs = append(sh.keptFDs, fd)
	}
	return true
}

// redirTarget opens what a redirection points fd at; nil with ok means
// close fd.
func (sh *shell) redirTarget(rd *syntax.Redirect, fd int) (*ofile, bool) {
	switch rd.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		body := sh.hereDoc(rd)
		return newOFile(strings.NewReader(body), nil, nil, "here-document"), true
	case syntax.WordHdoc:
		body := sh.expandString(rd.Word) + "\n"
		return newOFile(strings.NewReader(body), nil, nil, "here-string"), true
	case syntax.DplIn, syntax.DplOut:
		word, ok := sh.redirWord(rd.Word)
		if !ok {
			return nil, false
		}
		if word == "-" {
			return nil, true
		}
		move := strings.HasSuffix(word, "-") && len(word) > 1
		num := strings.TrimSuffix(word, "-")
		n, err := strconv.Atoi(num)
		if err != nil {
			if rd.Op == syntax.DplOut {
				// >&file: stdout and stderr to file (N>&file: N only)
				f, ok := sh.openRedir(word, vfs.O_WRONLY|vfs.O_CREATE|vfs.O_TRUNC, sh.opts.noclobber)
				if !ok {
					return nil, false
				}
				if rd.N == nil {
					sh.fds.set(2, f.ref())
				}
				return f, true
			}
			sh.errorf("%s: ambiguous redirect", word)
			return nil, false
		}
		src := sh.fds.get(n)
		if src == nil {
			sh.errorf("%d: Bad file descriptor", n)
			return nil, false
		}
		out := src.ref()
		if move && n != fd {
			sh.fds.close(n)
			sh.movedFDs = append(sh.movedFDs, n)
		}
		return out, true
	}
	word, ok := sh.redirWord(rd.Word)
	if !ok {
		return nil, false
	}
	switch rd.Op {
	case syntax.RdrIn:
		return sh.openRedir(word, vfs.O_RDONLY, false)
	case syntax.RdrInOut:
		return sh.openRedir(word, vfs.O_RDWR|vfs.O_CREATE, false)
	case syntax.RdrOut, syntax.RdrAll:
		return sh.openRedir(word, vfs.O_WRONLY|vfs.O_CREATE|vfs.O_TRUNC, sh.opts.noclobber)
	case syntax.RdrClob:
		return sh.openRedir(word, vfs.O_WRONLY|vfs.O_CREATE|vfs.O_TRUNC, false)
	case syntax.AppOut, syntax.AppAll:
		return sh.openRedir(word, vfs.O_WRONLY|vfs.O_CREATE|vfs.O_APPEND, false)
	}
	sh.errorf("unsupported redirection %s", rd.Op)
	return nil, false
}

// redirWord expands a redirection's word: exactly one word, or an
// ambiguous redirect.
func (sh *shell) redirWord(w *syntax.Word) (string, bool) {
	if sh.opts.posix && !sh.interactive {
		// POSIX: a non-interactive shell neither splits nor globs a
		// redirection's word (braces still make two words)
		if !sh.opts.braceexpand || !hasBraces(w) {
			return sh.expandString(w), true
		}
		if !sh.opts.noglob {
			sh.opts.noglob = true
			defer func() { sh.opts.noglob = false }()
		}
	}
	fields := sh.expandFields([]*syntax.Word{w})
	if len(fields) != 1 {
		text := wordText(w)
		sh.errorf("%s: ambiguous redirect", text)
		return "", false
	}
	return fields[0], true
}

// hereDoc expands a here-document's body (not when its delimiter was
// quoted) and removes leading tabs for <<-.
func (sh *shell) hereDoc(rd *syntax.Redirect) string {
	var body string
	if rd.Hdoc != nil {
		if quotedDelim(rd.Word) {
			var b strings.Builder
			for _, p := range rd.Hdoc.Parts {
				if l, ok := p.(*syntax.Lit); ok {
					b.WriteString(l.Value)
				}
			}
			body = b.String()
		} else {
			e := sh.newStringExpander()
			e.heredoc = true
			e.word(rd.Hdoc.Parts, true)
			body = e.str()
		}
	}
	if rd.Op == syntax.DashHdoc {
		lines := strings.SplitAfter(body, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimLeft(l, "\t")
		}
		body = strings.Join(lines, "")
	}
	return body
}

// quotedDelim reports whether a here-document's delimiter was quoted.
func quotedDelim(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.IndexByte(x.Value, '\\') >= 0 {
				return true
			}
		}
	}
	return false
}

// openRedir opens a redirection's file: /dev/stdin, /dev/stdout,
// /dev/stderr and /dev/fd/N are the shell's descriptors, the rest the
// sandbox's file system.
func (sh *shell) openRedir(p string, flag int, noclobber bool) (*ofile, bool) {
	abs := vfs.Abs(sh.dir, p)
	switch abs {
	case "/dev/stdin":
		abs = "/dev/fd/0"
	case "/dev/stdout":
		abs = "/dev/fd/1"
	case "/dev/stderr":
		abs = "/dev/fd/2"
	}
	if n, ok := strings.CutPrefix(abs, "/dev/fd/"); ok {
		fd, err := strconv.Atoi(n)
		if err == nil {
			if f := sh.fds.get(fd); f != nil {
				return f.ref(), true
			}
		}
		sh.errorf("%s: No such file or directory", p)
		return nil, false
	}
	if p == "" {
		sh.errorf(": No such file or directory")
		return nil, false
	}
	fsys := sh.r.cfg.FS
	if fsys == nil {
		sh.errorf("%s: No such file or directory", p)
		return nil, false
	}
	if noclobber {
		if info, err := fsys.Stat(sh.r.ctx, abs); err == nil && info.Mode().IsRegular() {
			sh.errorf("%s: cannot overwrite existing file", p)
			return nil, false
		}
	}
	if flag == vfs.O_RDONLY {
		// a directory opens (as open(2) does); reading it fails
		if info, err := fsys.Stat(sh.r.ctx, abs); err == nil && info.IsDir() {
			return newOFile(errReader{errIsDir}, nil, nil, abs), true
		}
	}
	f, err := fsys.Open(sh.r.ctx, abs, flag, fs.FileMode(0o666&^sh.r.umask))
	if err != nil {
		sh.errorf("%s: %s", p, errReason(err))
		return nil, false
	}
	var r io.Reader
	var w io.Writer
	if flag&(vfs.O_WRONLY|vfs.O_RDWR) == 0 || flag&vfs.O_RDWR != 0 {
		r = f
	}
	if flag&(vfs.O_WRONLY|vfs.O_RDWR) != 0 {
		w = &reportingFile{f: f, name: p, sh: sh}
	}
	return newOFile(r, w, f, abs), true
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

var errIsDir = &vfsErr{"Is a directory"}

// reportingFile reports its first failed write (a limit of the file
// system) on stderr, as bash reports a full disk.
type reportingFile struct {
	f        *vfs.File
	name     string
	sh       *shell
	reported bool
}

func (w *reportingFile) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil && !w.reported {
		w.reported = true
		w.sh.writeErr(w.sh.errPrefix() + w.name + ": " + errReason(err) + "\n")
	}
	return n, err
}

// errReason is the part of a file system error after its path.
func errReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// closeMoved closes, after a command the shell ran itself (a builtin, a
// function, a compound command), the descriptors its redirections moved
// (6>&7-): bash does not restore them (its bug, which scripts can see:
// echo >&7 then fails); a utility runs in a child, where it does not.
func (sh *shell) closeMoved(moved []int) {
	for _, n := range moved {
		sh.fds.close(n)
	}
}
