package schema

import (
	"fmt"

	"github.com/demiurge-dev/demiurge/internal/readall"
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
// Opening never blocks (see readall.Open).
func ReadAIRFile(path string) ([]byte, error) {
	b, err := readall.File(path, "an AIR file", MaxAIRFileSize)
	if err != nil {
		return nil, fmt.Errorf("read AIR: %w", err)
	}
	return b, nil
}
