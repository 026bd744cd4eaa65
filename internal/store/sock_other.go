//go:build !linux

package store

import (
	"fmt"
	"net"
)

// maxSockPath is the longest socket path bound or dialled: the smallest
// sun_path of the systems Go runs on holds 104 bytes, the NUL included.
const maxSockPath = 103

// sockAddr returns the address through which to bind or dial the socket
// at path, and a function to call once the address is no longer needed.
func sockAddr(path string) (addr string, done func(), err error) {
	if len(path) > maxSockPath {
		return "", nil, fmt.Errorf("the socket path %s is %d bytes, longer than a socket address takes (%d): use a store directory with a shorter path", path, len(path), maxSockPath)
	}
	return path, func() {}, nil
}

// peerAllowed reports whether the process at the other end of c may
// read: here the socket file's mode (0600, in a 0700 directory) decides.
func peerAllowed(net.Conn) bool { return true }

// peerPID returns the id of the process at the other end of c: 0, as
// this system does not say.
func peerPID(net.Conn) int { return 0 }

// peerCred returns the user and the process at the other end of c: not
// known here.
func peerCred(net.Conn) (uid, pid int) { return -1, 0 }

// socketOwner returns the user that owns the socket file at path: not
// known here (-1).
func socketOwner(string) int { return -1 }
