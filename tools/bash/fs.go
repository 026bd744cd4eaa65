package bash

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"mvdan.cc/sh/v3/interp"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// openHandler opens a redirection's file: /dev/stdin, /dev/stdout,
// /dev/stderr (and /dev/fd/0-2) are the command's streams, the rest the
// sandbox's file system. A failure is an *os.PathError, which the
// interpreter prints as "bash: <path>: <reason>" and which fails the
// command (status 1) without running it.
func (ex *execution) openHandler(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	abs := vfs.Abs(hc.Dir, p)
	switch abs {
	case "/dev/stdout", "/dev/fd/1":
		return stream{w: hc.Stdout}, nil
	case "/dev/stderr", "/dev/fd/2":
		return stream{w: hc.Stderr}, nil
	case "/dev/stdin", "/dev/fd/0":
		return stream{r: stdinOf(hc)}, nil
	}
	f, err := ex.fs.Open(ctx, abs, flag, perm)
	if err != nil {
		return nil, &os.PathError{Op: "bash:", Path: p, Err: reason(err)}
	}
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return f, nil
	}
	return &reportingFile{File: f, name: p, stderr: hc.Stderr}, nil
}

// reportingFile is a redirection's file that reports its first failed
// write (a limit of the file system) on the command's stderr, as bash
// reports a full disk: builtins such as echo ignore write errors.
type reportingFile struct {
	*vfs.File
	name     string
	stderr   io.Writer
	reported bool
}

func (f *reportingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if err != nil && !f.reported {
		f.reported = true
		if f.stderr != nil {
			io.WriteString(f.stderr, "bash: "+f.name+": "+reason(err).Error()+"\n")
		}
	}
	return n, err
}

// reason is the part of a file system error after its path.
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readDir lists a directory for globbing.
func (ex *execution) readDir(ctx context.Context, p string) ([]fs.DirEntry, error) {
	hc := interp.HandlerCtx(ctx)
	infos, err := ex.fs.ReadDir(ctx, vfs.Abs(hc.Dir, p))
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(infos))
	for i, info := range infos {
		out[i] = fs.FileInfoToDirEntry(info)
	}
	return out, nil
}

// stat answers test -e/-f/-d/-s, cd and globbing.
func (ex *execution) stat(ctx context.Context, name string, followSymlinks bool) (fs.FileInfo, error) {
	hc := interp.HandlerCtx(ctx)
	info, err := ex.fs.Stat(ctx, vfs.Abs(hc.Dir, name))
	if err != nil {
		return nil, err
	}
	return info, nil
}

// access answers test -r/-w/-x and cd: what exists is readable, what is
// under /workspace or /tmp (and /dev/null) writable, and directories and
// files with an x bit executable.
func (ex *execution) access(ctx context.Context, p string, mode interp.AccessMode) error {
	hc := interp.HandlerCtx(ctx)
	abs := vfs.Abs(hc.Dir, p)
	info, err := ex.fs.Stat(ctx, abs)
	if err != nil {
		return err
	}
	denied := &fs.PathError{Op: "access", Path: p, Err: fs.ErrPermission}
	switch mode {
	case interp.AccessWrite:
		if _, ok := vfs.Rel(abs); !ok && abs != vfs.TmpDir && !strings.HasPrefix(abs, vfs.TmpDir+"/") && abs != "/dev/null" {
			return denied
		}
	case interp.AccessExec:
		if !info.IsDir() && info.Mode()&0o111 == 0 {
			return denied
		}
	}
	return nil
}

// stream is a redirection to one of the command's own streams; closing it
// leaves the stream open.
type stream struct {
	r io.Reader
	w io.Writer
}

func (s stream) Read(p []byte) (int, error) {
	if s.r == nil {
		return 0, io.EOF
	}
	return s.r.Read(p)
}

func (s stream) Write(p []byte) (int, error) {
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

func (stream) Close() error { return nil }
