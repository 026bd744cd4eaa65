package schema

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxAIRFileSize bounds the size of one AIR file. Manifests and defs are
// text written by people and tools, some kilobytes each (AgentOS's largest
// are under 100 KiB): a file larger than this is not an AIR file, and
// reading it whole (a symlink to /dev/zero, say) would only exhaust memory.
const MaxAIRFileSize = 16 << 20

// ReadAIRFile reads the AIR file at path, refusing what is not a regular
// file (a FIFO, a device, a socket: reading one could block forever or
// never end) and a file over MaxAIRFileSize, with an error naming the
// file and what it is. A symlink to a regular file is read as that file.
// Opening never blocks: the file is opened without waiting for a writer
// (O_NONBLOCK), so a FIFO put in its place between the check and the open
// is refused too.
func ReadAIRFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read AIR: %w", err)
	}
	if err := airFileKind(path, st); err != nil {
		return nil, err
	}
	f, err := openNoBlock(path)
	if err != nil {
		return nil, fmt.Errorf("read AIR: %w", err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("read AIR: %w", err)
	}
	if err := airFileKind(path, st); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxAIRFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read AIR: %w", err)
	}
	if len(b) > MaxAIRFileSize {
		return nil, fmt.Errorf("read AIR: %s: more than %d bytes (it grew while read): an AIR file is at most %d MiB", path, MaxAIRFileSize, MaxAIRFileSize>>20)
	}
	return b, nil
}

// airFileKind refuses a file that is not regular or is too large to be
// an AIR file.
func airFileKind(path string, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("read AIR: %s is not a regular file (%s): an AIR file must be a regular file holding JSON", path, fileKind(st.Mode()))
	}
	if st.Size() > MaxAIRFileSize {
		return fmt.Errorf("read AIR: %s is %d bytes: an AIR file is at most %d MiB (%d bytes)", path, st.Size(), MaxAIRFileSize>>20, MaxAIRFileSize)
	}
	return nil
}

// fileKind names what a file of mode m is, for messages.
func fileKind(m fs.FileMode) string {
	switch {
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
