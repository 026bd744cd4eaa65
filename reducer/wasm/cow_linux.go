//go:build linux

package wasm

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// cowMemory is a module's linear memory that resets to its instantiated
// image at the cost of the pages steps wrote, not of the whole memory:
// once frozen, its pages are a private mapping of a memfd holding the
// image, so a page the module never wrote is the memfd's, and one it wrote
// is a private copy. A reset reads which pages are private copies
// (/proc/self/pagemap) and copies the image back into those only; without
// pagemap, it drops every private copy (madvise MADV_DONTNEED), and the
// pages read the image again, at the cost of a page fault each. The memory
// is reserved whole at its maximum, so its address never changes as it
// grows.
type cowMemory struct {
	mem    []byte // the reservation: max bytes, usable up to size
	size   int
	fd     int    // the image's memfd once frozen, else -1
	frozen int    // the length of the image
	image  []byte // the image, to copy back
	flags  []byte // pagemap entries, reused
}

// pagemap is /proc/self/pagemap, opened once; -1 if it cannot be.
var pagemap = sync.OnceValue(func() int {
	fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
})

// newCowAllocator returns an allocator of cowMemory, and the memory it
// allocated last: the host instantiates one module at a time with it.
func newCowAllocator() (experimental.MemoryAllocator, func() *cowMemory) {
	var last *cowMemory
	alloc := experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		last = nil
		if max == 0 || max > 1<<32 {
			return nil
		}
		b, err := unix.Mmap(-1, 0, int(max), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
		if err != nil {
			return nil
		}
		last = &cowMemory{mem: b, fd: -1}
		return last
	})
	return alloc, func() *cowMemory { return last }
}

// Reallocate implements experimental.LinearMemory: it makes the first size
// bytes usable, at the same address.
func (c *cowMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(c.mem)) {
		return nil
	}
	if int(size) > c.size {
		if err := unix.Mprotect(c.mem[c.size:size], unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return nil
		}
		c.size = int(size)
	}
	return c.mem[:size:size]
}

// Free implements experimental.LinearMemory.
func (c *cowMemory) Free() {
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
	if c.mem != nil {
		_ = unix.Munmap(c.mem)
		c.mem = nil
	}
}

// freeze makes the memory's current contents its image: they move into a
// memfd that the memory's pages then map privately.
func (c *cowMemory) freeze(image []byte) error {
	n := c.size
	if n == 0 || n%unix.Getpagesize() != 0 {
		return fmt.Errorf("memory of %d bytes", n)
	}
	fd, err := unix.MemfdCreate("demiurge-wasm-image", unix.MFD_CLOEXEC)
	if err != nil {
		return err
	}
	if _, err := unix.Pwrite(fd, c.mem[:n], 0); err != nil {
		_ = unix.Close(fd)
		return err
	}
	if _, err := unix.MmapPtr(fd, 0, unsafe.Pointer(&c.mem[0]), uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
		_ = unix.Close(fd)
		return err
	}
	c.fd, c.frozen, c.image = fd, n, image
	return nil
}

// reset returns the memory to its image, or reports that it cannot: not
// frozen, or grown past its image.
func (c *cowMemory) reset() bool {
	if c.fd < 0 || c.size != c.frozen || len(c.image) != c.frozen {
		return false
	}
	page := unix.Getpagesize()
	pages := c.frozen / page
	if fd := pagemap(); fd >= 0 {
		if len(c.flags) < pages*8 {
			c.flags = make([]byte, pages*8)
		}
		off := int64(uintptr(unsafe.Pointer(&c.mem[0]))/uintptr(page)) * 8
		if n, err := unix.Pread(fd, c.flags[:pages*8], off); err == nil && n == pages*8 {
			for i := 0; i < pages; i++ {
				e := binary.LittleEndian.Uint64(c.flags[i*8:])
				// Present, and not the memfd's page: a private copy.
				if e&(1<<63) != 0 && e&(1<<61) == 0 {
					copy(c.mem[i*page:(i+1)*page], c.image[i*page:(i+1)*page])
				}
			}
			return true
		}
	}
	return unix.Madvise(c.mem[:c.frozen], unix.MADV_DONTNEED) == nil
}
