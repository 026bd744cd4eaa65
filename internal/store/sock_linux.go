package store

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// maxSockPath is the longest socket path bound or dialled as it is; the
// kernel's sun_path holds 108 bytes, the NUL included.
const maxSockPath = 100

// sockAddr returns the address through which to bind or dial the socket
// at path, and a function to call once the address is no longer needed.
// A path too long for a socket address is reached through the store
// directory's file descriptor: /proc/self/fd/N/NAME.
func sockAddr(path string) (addr string, done func(), err error) {
	if len(path) <= maxSockPath {
		return path, func() {}, nil
	}
	fd, err := syscall.Open(filepath.Dir(path), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, &os.PathError{Op: "open", Path: filepath.Dir(path), Err: err}
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(path)), func() { _ = syscall.Close(fd) }, nil
}

// peerAllowed reports whether the process at the other end of c runs as
// this process's user. The writer checks its readers (the socket file's
// mode, 0600 in a 0700 directory, keeps others out already), and a
// reader its writer (a store directory others can write could hold a
// socket another user put there).
func peerAllowed(c net.Conn) bool {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return false
	}
	return int(cred.Uid) == os.Getuid()
}

// peerCred returns the user and the process at the other end of c, or
// -1 and 0 if the system does not say.
func peerCred(c net.Conn) (uid, pid int) {
	uid = -1
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return uid, 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return uid, 0
	}
	_ = raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			uid, pid = int(cred.Uid), int(cred.Pid)
		}
	})
	return uid, pid
}

// peerPID returns the id of the process at the other end of c, or 0 if
// the system does not say.
func peerPID(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	var pid int
	_ = raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// socketOwner returns the user that owns the socket file at path, or -1.
func socketOwner(path string) int {
	fi, err := os.Lstat(path)
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
