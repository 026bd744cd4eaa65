package coreutils

import (
	"io"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// teeCmd copies stdin to stdout and to each FILE: tee [-a] [FILE]...
// A file that cannot be opened is reported and makes the status 1; the
// others are still written.
func teeCmd(c *cmd, args []string) int {
	appendMode := false
	files, st, ok := c.flags(args, "", 1, func(f, _ string) error {
		switch f {
		case "-a", "--append":
			appendMode = true
		case "-i", "--ignore-interrupts", "-p":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	var outs []io.Writer
	for _, f := range files {
		switch f {
		case "-", "/dev/stdout":
			outs = append(outs, c.out)
			continue
		case "/dev/stderr":
			outs = append(outs, c.env.Stderr)
			continue
		case "/dev/null":
			continue
		}
		if c.env.FS == nil {
			c.noFS(1, f)
			c.fail(1)
			continue
		}
		flag := vfs.O_WRONLY | vfs.O_CREATE | vfs.O_TRUNC
		if appendMode {
			flag = vfs.O_WRONLY | vfs.O_CREATE | vfs.O_APPEND
		}
		w, err := c.env.FS.Open(c.ctx, c.abs(f), flag, 0)
		if err != nil {
			c.fileErr(1, f, err)
			c.fail(1)
			continue
		}
		outs = append(outs, &reportingWriter{c: c, name: f, w: w})
	}
	if len(outs) == 0 {
		return c.copyStdin(0)
	}
	out := c.out
	c.out.Flush()
	mw := io.MultiWriter(append([]io.Writer{out}, outs...)...)
	buf := make([]byte, 32*1024)
	for {
		if c.stopped() {
			return c.errf(1, "interrupted")
		}
		n, err := c.in.Read(buf)
		if n > 0 {
			mw.Write(buf[:n])
		}
		if err == io.EOF {
			return c.done(0)
		}
		if err != nil {
			return c.readErr(err)
		}
	}
}

// reportingWriter writes to a file and reports its first failure (a
// limit of the file system), then drops the rest, so that tee goes on
// writing its other outputs.
type reportingWriter struct {
	c      *cmd
	name   string
	w      io.Writer
	failed bool
}

func (r *reportingWriter) Write(p []byte) (int, error) {
	if r.failed {
		return len(p), nil
	}
	if _, err := r.w.Write(p); err != nil {
		r.failed = true
		r.c.out.Flush()
		r.c.fileErr(1, r.name, err)
		r.c.fail(1)
	}
	return len(p), nil
}
