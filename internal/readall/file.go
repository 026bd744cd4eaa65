package readall

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by the errors of File and Open for a path
// that is not a regular file: a FIFO (reading it blocks until something
// writes it), a device (/dev/zero never ends), a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the errors of File and Open for a file over
// the bound its reader sets.
var ErrTooLarge = errors.New("file too large")

// NoLimit is the max of File and Open that bounds nothing but the kind of
// file.
const NoLimit = -1

// File reads the file a user named at path, whole, refusing what is not a
// regular file and a file of more than max bytes (NoLimit: no bound),
// with an error naming the file and what it is. what says what the file
// should be ("an AIR file", "a token file"): the errors say "what is at
// most N MiB". A symlink to a regular file is read as that file. Opening
// never blocks (see Open).
func File(path, what string, max int64) ([]byte, error) {
	f, st, err := Open(path, what, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := io.Reader(f)
	if max >= 0 {
		r = io.LimitReader(f, max+1)
	}
	b, err := Sized(r, st.Size())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if max >= 0 && int64(len(b)) > max {
		return nil, &fileError{fmt.Sprintf("%s grew past %s while read: %s is at most %s", path, size(max), what, size(max)), ErrTooLarge}
	}
	return b, nil
}

// Open opens the file a user named at path for reading, once it is a
// regular file of at most max bytes (NoLimit: any size); see File. The
// file is opened without waiting for a FIFO's writer (O_NONBLOCK, where
// there are FIFOs) and checked again once open, so a FIFO or device put
// in its place between the check and the open is refused too. The
// returned info is the open file's.
func Open(path, what string, max int64) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op = "open" // what the caller asked for, as os.Open says it
		}
		return nil, nil, err
	}
	if err := kind(path, what, max, st); err != nil {
		return nil, nil, err
	}
	f, err := openNoBlock(path)
	if err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := kind(path, what, max, st); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// kind refuses a file that is not regular or is larger than max.
func kind(path, what string, max int64, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return &fileError{fmt.Sprintf("%s is not a regular file (%s): %s must be a regular file", path, Kind(st.Mode()), what), ErrNotRegular}
	}
	if max >= 0 && st.Size() > max {
		return &fileError{fmt.Sprintf("%s is %d bytes: %s is at most %s (%d bytes)", path, st.Size(), what, size(max), max), ErrTooLarge}
	}
	return nil
}

// fileError is an error of File or Open: its message, and the sentinel
// it is.
type fileError struct {
	msg  string
	kind error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.kind }

// size writes n bytes in the largest binary unit that divides it.
func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Kind names what a file of mode m is, for messages: "a FIFO, which would
// block until something writes it", "a character device", ….
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO, which would block until something writes it"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "mode " + m.String()
}

// FSFile is File of the file name of fsys (a bundle read from a directory
// or from memory): it refuses what is not a regular file, checked before
// and after the open, and a file over max bytes (NoLimit: no bound).
// Unlike Open it cannot open without blocking: on an os.DirFS, a FIFO put
// in place between the check and the open is waited on.
func FSFile(fsys fs.FS, name, what string, max int64) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := kind(name, what, max, st); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	if err := kind(name, what, max, st); err != nil {
		return nil, err
	}
	r := io.Reader(f)
	if max >= 0 {
		r = io.LimitReader(f, max+1)
	}
	b, err := Sized(r, st.Size())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if max >= 0 && int64(len(b)) > max {
		return nil, &fileError{fmt.Sprintf("%s grew past %s while read: %s is at most %s", name, size(max), what, size(max)), ErrTooLarge}
	}
	return b, nil
}
