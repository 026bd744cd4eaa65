package coreutils

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// abs resolves a path operand against the working directory.
func (c *cmd) abs(p string) string {
	dir := c.env.Dir
	if dir == "" {
		dir = "/"
	}
	return vfs.Abs(dir, p)
}

// noFS reports (and returns the status of) a file operand given to a
// command that runs without a file system.
func (c *cmd) noFS(status int, p string) int {
	return c.errf(status, "%s: filesystem access disabled", p)
}

// why is the part of a file error a utility prints after the path: the C
// library's words ("No such file or directory").
func why(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// fileErr prints "name: p: why" and returns status.
func (c *cmd) fileErr(status int, p string, err error) int {
	return c.errf(status, "%s: %s", p, why(err))
}

// readFile returns the content of an input operand: "-" and /dev/stdin are
// the command's stdin (read whole), anything else a file of the FS.
func (c *cmd) readFile(p string) ([]byte, error) {
	switch p {
	case "-", "/dev/stdin", "/dev/fd/0":
		return c.readAll()
	}
	if c.env.FS == nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: errNoFS}
	}
	return c.env.FS.ReadFile(c.ctx, c.abs(p))
}

var errNoFS = errors.New("filesystem access disabled")

// openInput returns a reader of an input operand (see readFile); the
// command's stdin is not read ahead.
func (c *cmd) openInput(p string) (io.Reader, error) {
	switch p {
	case "-", "/dev/stdin", "/dev/fd/0":
		return c.in, nil
	}
	if c.env.FS != nil && strings.HasPrefix(c.abs(p), "/dev/") {
		return c.env.FS.Open(c.ctx, c.abs(p), vfs.O_RDONLY, 0)
	}
	data, err := c.readFile(p)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(data), nil
}

// operands makes the command's input the concatenation of the file
// operands, in order ("-" is stdin), or stdin when there are none. An
// operand that cannot be read is reported ("name: f: No such file or
// directory") and skipped, and the command's final status becomes at least
// failStatus (see done). ok is false only without a file system.
func (c *cmd) operands(files []string) (int, bool) {
	return c.inputs(files, 1)
}

// inputs is operands with the status a missing file leaves.
func (c *cmd) inputs(files []string, failStatus int) (int, bool) {
	if len(files) == 0 {
		return 0, true
	}
	if c.env.FS == nil {
		for _, f := range files {
			if !isStdin(f) {
				return c.noFS(2, f), false
			}
		}
		return 0, true
	}
	var rs []io.Reader
	for _, f := range files {
		r, err := c.openInput(f)
		if err != nil {
			c.fileErr(failStatus, f, err)
			c.fail(failStatus)
			continue
		}
		rs = append(rs, r)
	}
	c.in = &limitedReader{r: io.MultiReader(rs...), n: c.inputBound()}
	return 0, true
}

// inputBound is the number of bytes a command may read (-1: no bound).
func (c *cmd) inputBound() int64 {
	if c.env.MaxInputBytes <= 0 {
		return -1
	}
	return c.env.MaxInputBytes
}

// fail raises the status done returns to at least status.
func (c *cmd) fail(status int) {
	if status > c.failed {
		c.failed = status
	}
}

// withInput runs fn with the command's input replaced by r (bounded like
// stdin), then restores it.
func (c *cmd) withInput(r io.Reader, fn func()) {
	old := c.in
	c.in = &limitedReader{r: r, n: c.inputBound()}
	fn()
	c.in = old
}

// eachInput calls fn for every input operand with the input set to it (and
// for stdin when there are none); a file that cannot be read is reported
// and skipped with status failStatus. name is the operand as written.
func (c *cmd) eachInput(files []string, failStatus int, fn func(name string) bool) bool {
	if len(files) == 0 {
		return fn("-")
	}
	for _, f := range files {
		if c.env.FS == nil && !isStdin(f) {
			c.noFS(2, f)
			c.fail(2)
			return false
		}
		r, err := c.openInput(f)
		if err != nil {
			c.fileErr(failStatus, f, err)
			c.fail(failStatus)
			continue
		}
		goOn := true
		c.withInput(r, func() { goOn = fn(f) })
		if !goOn {
			return false
		}
	}
	return true
}

// writeFile writes data to the file p (created or truncated), reporting
// a failure; false when it failed.
func (c *cmd) writeFile(p string, data []byte) bool {
	if c.env.FS == nil {
		c.noFS(1, p)
		return false
	}
	if err := c.env.FS.WriteFile(c.ctx, c.abs(p), data, 0); err != nil {
		c.fileErr(1, p, err)
		return false
	}
	return true
}

// needFS reports whether the command has a file system, printing an error
// when it has none.
func (c *cmd) needFS() bool {
	if c.env.FS == nil {
		c.errf(1, "filesystem access disabled")
		return false
	}
	return true
}

// walkFunc is called by walk for every entry: p is the path as it would
// be printed (the start operand joined with the entry's path below it),
// abs its absolute path, depth 0 for the start. Returning errSkipDir
// skips a directory's entries; another error stops the walk.
type walkFunc func(p, abs string, info *vfs.Info, depth int) error

var errSkipDir = errors.New("skip this directory")

// walk visits the tree at start depth first, a directory before its
// entries, entries sorted by name. A directory that cannot be listed is
// reported through onErr and skipped.
func (c *cmd) walk(start string, fn walkFunc, onErr func(p string, err error)) error {
	abs := c.abs(start)
	info, err := c.env.FS.Stat(c.ctx, abs)
	if err != nil {
		onErr(start, err)
		return nil
	}
	return c.walkAt(start, abs, info, 0, fn, onErr)
}

func (c *cmd) walkAt(p, abs string, info *vfs.Info, depth int, fn walkFunc, onErr func(string, error)) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	err := fn(p, abs, info, depth)
	if errors.Is(err, errSkipDir) || !info.IsDir() {
		return nil
	}
	if err != nil {
		return err
	}
	entries, err := c.env.FS.ReadDir(c.ctx, abs)
	if err != nil {
		onErr(p, err)
		return nil
	}
	for _, e := range entries {
		cp := p + "/" + e.Name()
		if strings.HasSuffix(p, "/") {
			cp = p + e.Name()
		}
		ca := abs + "/" + e.Name()
		if abs == "/" {
			ca = "/" + e.Name()
		}
		if err := c.walkAt(cp, ca, e, depth+1, fn, onErr); err != nil {
			return err
		}
	}
	return nil
}

// isStdin reports whether an operand names the command's stdin.
func isStdin(p string) bool { return p == "-" || p == "/dev/stdin" || p == "/dev/fd/0" }

// readLines reads an operand whole and splits it into lines.
func (c *cmd) readLines(name string) ([]string, bool) {
	data, err := c.readFile(name)
	if err != nil {
		c.fileErr(1, name, err)
		return nil, false
	}
	return splitLines(string(data)), true
}
