package cli

import (
	"errors"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// escWatch stops a turn when the user presses Esc, as Claude Code and
// Codex do: while the turn runs, the terminal reads keys one by one
// (ICANON off; ISIG stays on, so Ctrl-C is still SIGINT; no echo, so keys
// do not land in the middle of the answer), and a lone Esc, not the start
// of an arrow key's sequence, fires. What else the user types meanwhile is
// kept for the next prompt (typed). It reads the interruptible input (see
// interruptibleInput), and stop ends it at once.
type escWatch struct {
	in    *os.File
	saved unix.Termios
	fire  func()

	mu      sync.Mutex
	stopped bool
	typed   []byte
	done    chan struct{}
}

// escWait is how long after an Esc the bytes of a key's escape sequence
// (an arrow: ESC [ A) may take to come: none by then is a lone Esc.
const escWait = 40 * time.Millisecond

// startEsc starts watching in, a terminal, for Esc; fire is called once
// for each lone Esc. It returns nil if the terminal's modes cannot be
// read or set (then nothing watches, and the terminal is as it was).
func startEsc(in *os.File, fire func()) *escWatch {
	if in == nil {
		return nil
	}
	w := &escWatch{in: in, fire: fire, done: make(chan struct{})}
	ok := false
	w.control(func(fd int) {
		t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil {
			return
		}
		w.saved = *t
		c := *t
		c.Lflag &^= unix.ICANON | unix.ECHO
		c.Lflag |= unix.ISIG
		c.Cc[unix.VMIN], c.Cc[unix.VTIME] = 1, 0
		ok = unix.IoctlSetTermios(fd, unix.TCSETS, &c) == nil
	})
	if !ok {
		return nil
	}
	_ = in.SetReadDeadline(time.Time{})
	go w.read()
	return w
}

// control runs f on the input's descriptor, leaving it non-blocking (Fd
// would make it blocking, and read deadlines would stop working).
func (w *escWatch) control(f func(fd int)) {
	rc, err := w.in.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { f(int(fd)) })
}

func (w *escWatch) read() {
	defer close(w.done)
	buf := make([]byte, 256)
	for {
		n, err := w.in.Read(buf)
		// Bytes read are the user's keys, taken from the terminal: kept
		// even when stop came meanwhile, or they would be lost.
		w.keys(buf[:n])
		if w.isStopped() {
			return
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
	}
}

// keys handles the bytes of one read: Esc sequences, and what is typed.
func (w *escWatch) keys(b []byte) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != 0x1b {
			w.keep(c)
			continue
		}
		if i+1 < len(b) { // a sequence: ESC [ … final, or ESC O x, or Alt-key
			i = skipSequence(b, i+1)
			continue
		}
		// A lone Esc so far: does a sequence follow?
		more := make([]byte, 32)
		_ = w.in.SetReadDeadline(time.Now().Add(escWait))
		m, _ := w.in.Read(more)
		if !w.isStopped() { // stop's deadline ends read's next Read: keep it
			_ = w.in.SetReadDeadline(time.Time{})
		}
		if m == 0 {
			if !w.isStopped() {
				w.fire()
			}
			continue
		}
		if j := skipSequence(more[:m], 0); j+1 < m {
			w.keys(more[j+1 : m])
		}
	}
}

// skipSequence returns the index of the last byte of the escape sequence
// that starts at b[i] (after its ESC).
func skipSequence(b []byte, i int) int {
	if i >= len(b) {
		return len(b) - 1
	}
	switch b[i] {
	case '[': // CSI: parameters, then a final byte 0x40–0x7e
		for j := i + 1; j < len(b); j++ {
			if b[j] >= 0x40 && b[j] <= 0x7e {
				return j
			}
		}
		return len(b) - 1
	case 'O': // SS3: one more byte
		return min(i+1, len(b)-1)
	}
	return i // Alt and a key
}

// keep keeps a typed byte for the next prompt: text, Enter (a line
// typed ahead is taken as sent: see readLine), and backspace taking the
// last character back; other control keys are dropped.
func (w *escWatch) keep(c byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case c == '\r' || c == '\n':
		w.typed = append(w.typed, '\n')
	case c == 0x7f || c == 0x08:
		if len(w.typed) > 0 {
			_, n := utf8.DecodeLastRune(w.typed)
			w.typed = w.typed[:len(w.typed)-n]
		}
	case c >= 0x20 || c == '\t':
		w.typed = append(w.typed, c)
	}
}

func (w *escWatch) isStopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

// stop ends the watch, gives the terminal its modes back, and returns
// what was typed meanwhile. Nil-safe.
func (w *escWatch) stop() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	_ = w.in.SetReadDeadline(time.Now())
	<-w.done
	_ = w.in.SetReadDeadline(time.Time{})
	w.control(func(fd int) { _ = unix.IoctlSetTermios(fd, unix.TCSETS, &w.saved) })
	w.mu.Lock()
	defer w.mu.Unlock()
	s := string(w.typed)
	if !utf8.ValidString(s) {
		s = ""
	}
	return s
}
