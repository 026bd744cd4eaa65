package shell

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
)

// ofile is an open file description: what a file descriptor refers to.
// Descriptors made by dup, and the copies a subshell gets, share it; it
// is closed when the last of them closes.
type ofile struct {
	refs atomic.Int32
	r    io.Reader // nil: not open for reading
	w    io.Writer // nil: not open for writing
	c    io.Closer // nil: nothing to close (the script's own streams)
	name string    // the path it was opened as, for messages
	// pipeEnd is set for an end of a pipe (reads and writes of builtins
	// may use its line reading).
	pipe *pipe
}

func newOFile(r io.Reader, w io.Writer, c io.Closer, name string) *ofile {
	f := &ofile{r: r, w: w, c: c, name: name}
	f.refs.Store(1)
	return f
}

func (f *ofile) ref() *ofile {
	f.refs.Add(1)
	return f
}

func (f *ofile) unref() {
	if f.refs.Add(-1) == 0 && f.c != nil {
		f.c.Close()
	}
}

// fdTable is a shell's file descriptors.
type fdTable struct {
	fds []*ofile
}

func newFDTable(stdin io.Reader, stdout, stderr io.Writer) *fdTable {
	t := &fdTable{fds: make([]*ofile, 3, 10)}
	if stdin != nil {
		t.fds[0] = newOFile(stdin, nil, nil, "/dev/stdin")
	} else {
		t.fds[0] = newOFile(eofReader{}, nil, nil, "/dev/stdin")
	}
	t.fds[1] = newOFile(nil, stdout, nil, "/dev/stdout")
	t.fds[2] = newOFile(nil, stderr, nil, "/dev/stderr")
	return t
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

func (t *fdTable) get(fd int) *ofile {
	if fd < 0 || fd >= len(t.fds) {
		return nil
	}
	return t.fds[fd]
}

// set makes fd refer to f (taking a reference) and closes what it
// referred to.
func (t *fdTable) set(fd int, f *ofile) {
	for fd >= len(t.fds) {
		t.fds = append(t.fds, nil)
	}
	if old := t.fds[fd]; old != nil {
		old.unref()
	}
	t.fds[fd] = f
}

func (t *fdTable) close(fd int) {
	if fd < len(t.fds) && t.fds[fd] != nil {
		t.fds[fd].unref()
		t.fds[fd] = nil
	}
}

// clone copies the table, each descriptor sharing its open file.
func (t *fdTable) clone() *fdTable {
	c := &fdTable{fds: make([]*ofile, len(t.fds), max(len(t.fds), 10))}
	for i, f := range t.fds {
		if f != nil {
			c.fds[i] = f.ref()
		}
	}
	return c
}

func (t *fdTable) closeAll() {
	for i, f := range t.fds {
		if f != nil {
			f.unref()
			t.fds[i] = nil
		}
	}
}

// freeFD returns the lowest free descriptor ≥ from.
func (t *fdTable) freeFD(from int) int {
	for fd := from; ; fd++ {
		if fd >= len(t.fds) || t.fds[fd] == nil {
			return fd
		}
	}
}

// pipeSize is what a pipe buffers before its writer blocks: 4 KiB, not
// Linux's 64 KiB. A loop writing short lines into `| head -1` runs until
// head has read and closed its end; with 64 KiB buffered (32,768 lines of
// "x\n") a loop could pass the script's command limit before head even
// started, by the scheduler's whim (1 run in 3 on a loaded machine). With
// 4 KiB the writer waits for the reader after 2,048 such lines, so the
// commands it runs before its write fails with EPIPE stay well inside the
// limit, whatever the timing.
const pipeSize = 4 << 10

// pipe is an in-process pipe with a Linux pipe's buffer: a writer blocks
// while the buffer is full, a write after the reader closed fails with
// EPIPE, a read after the writer closed and the buffer drained is EOF.
// Both ends unblock when done is closed (the run stopped).
type pipe struct {
	mu      sync.Mutex
	buf     []byte
	rClosed bool
	wClosed bool
	// readable and writable are signalled (non-blocking sends) when data
	// arrives or room frees up.
	readable chan struct{}
	writable chan struct{}
	done     <-chan struct{}
}

func newPipe(done <-chan struct{}) *pipe {
	return &pipe{readable: make(chan struct{}, 1), writable: make(chan struct{}, 1), done: done}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// errStopped is returned by pipe operations once the run stopped.
var errStopped = errors.New("run stopped")

func (p *pipe) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		if len(p.buf) > 0 {
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			if len(p.buf) == 0 {
				p.buf = nil
			}
			p.mu.Unlock()
			signal(p.writable)
			return n, nil
		}
		if p.wClosed || p.rClosed {
			p.mu.Unlock()
			return 0, io.EOF
		}
		p.mu.Unlock()
		select {
		case <-p.readable:
		case <-p.done:
			return 0, errStopped
		}
	}
}

// readLine reads up to and including delim, or to EOF, at most max bytes
// (max ≤ 0: no bound); it never reads past delim.
func (p *pipe) readLine(delim byte, max int) (string, error) {
	var out []byte
	for {
		p.mu.Lock()
		if len(p.buf) > 0 {
			n := len(p.buf)
			if max > 0 && n > max-len(out) {
				n = max - len(out)
			}
			found := false
			for i := 0; i < n; i++ {
				if p.buf[i] == delim {
					n, found = i+1, true
					break
				}
			}
			out = append(out, p.buf[:n]...)
			p.buf = p.buf[n:]
			if len(p.buf) == 0 {
				p.buf = nil
			}
			p.mu.Unlock()
			signal(p.writable)
			if found || max > 0 && len(out) >= max {
				return string(out), nil
			}
			continue
		}
		if p.wClosed || p.rClosed {
			p.mu.Unlock()
			return string(out), io.EOF
		}
		p.mu.Unlock()
		select {
		case <-p.readable:
		case <-p.done:
			return string(out), errStopped
		}
	}
}

func (p *pipe) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		p.mu.Lock()
		if p.rClosed {
			p.mu.Unlock()
			return written, syscall.EPIPE
		}
		if p.wClosed {
			p.mu.Unlock()
			return written, io.ErrClosedPipe
		}
		room := pipeSize - len(p.buf)
		if room > 0 {
			n := min(room, len(b))
			p.buf = append(p.buf, b[:n]...)
			b = b[n:]
			written += n
			p.mu.Unlock()
			signal(p.readable)
			continue
		}
		p.mu.Unlock()
		select {
		case <-p.writable:
		case <-p.done:
			return written, errStopped
		}
	}
	return written, nil
}

func (p *pipe) closeRead() {
	p.mu.Lock()
	p.rClosed = true
	p.buf = nil
	p.mu.Unlock()
	signal(p.writable)
	signal(p.readable)
}

func (p *pipe) closeWrite() {
	p.mu.Lock()
	p.wClosed = true
	p.mu.Unlock()
	signal(p.readable)
}

// pipeReader and pipeWriter are the two ends as io.Closers.
type pipeReader struct{ *pipe }

func (r pipeReader) Close() error { r.closeRead(); return nil }

type pipeWriter struct{ *pipe }

func (w pipeWriter) Close() error { w.closeWrite(); return nil }

// newPipeFiles makes a pipe and its two open files.
func (sh *shell) newPipeFiles() (r, w *ofile) {
	p := newPipe(sh.r.ctx.Done())
	r = newOFile(p, nil, pipeReader{p}, "pipe")
	r.pipe = p
	w = newOFile(nil, p, pipeWriter{p}, "pipe")
	w.pipe = p
	return r, w
}

// isBrokenPipe reports whether err is a write to a pipe nobody reads.
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe)
}
