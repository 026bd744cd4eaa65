package workspace

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/effects"
)

// Path limits: a workspace must be exportable to an ordinary file system.
const (
	// MaxPathBytes bounds the length of a path.
	MaxPathBytes = 4096
	// MaxNameBytes bounds the length of one path component.
	MaxNameBytes = 255
)

// Errors of tree operations, returned wrapped in a *PathError.
var (
	// ErrNotFound is returned when a path names nothing in the tree.
	ErrNotFound = errors.New("workspace: not found")
	// ErrNotDir is returned when a path goes through, or lists, a file as
	// if it were a directory.
	ErrNotDir = errors.New("workspace: not a directory")
	// ErrIsDir is returned when a path names a directory where a file is
	// needed (read, write, edit).
	ErrIsDir = errors.New("workspace: is a directory")
	// ErrNotEmpty is returned when a non-recursive remove names a directory
	// that holds entries.
	ErrNotEmpty = errors.New("workspace: directory not empty")
	// ErrInvalidPath is returned for a path that is absolute, escapes the
	// workspace, holds a NUL or backslash, is not UTF-8, is too long, or
	// names the root where a file is needed.
	ErrInvalidPath = errors.New("workspace: invalid path")
	// ErrBadTree is returned when a node is not a valid sys/WorkspaceTree@2
	// (unsorted or duplicate names, an unknown kind, a bad name).
	ErrBadTree = errors.New("workspace: malformed tree")
	// ErrBadRange is returned for a byte range that starts past the end of
	// the file or ends before it starts.
	ErrBadRange = errors.New("workspace: invalid byte range")
)

// PathError records an error and the operation and path that caused it,
// like io/fs.PathError.
type PathError struct {
	Op   string // "read", "write", "list", ...
	Path string // the workspace path, cleaned when it could be
	Err  error
}

func (e *PathError) Error() string {
	p := e.Path
	if p == "" {
		p = "/"
	}
	return "workspace " + e.Op + " " + p + ": " + strings.TrimPrefix(e.Err.Error(), "workspace: ")
}

// Unwrap returns the underlying error.
func (e *PathError) Unwrap() error { return e.Err }

// CleanPath normalizes a workspace path: slash separated, relative to the
// root, without "." or ".." components, empty for the root. It refuses
// (with an error wrapping ErrInvalidPath) what effects.CleanWorkspacePath
// refuses — absolute paths, ".." anywhere, NUL and backslash — and paths
// that are not valid UTF-8, longer than MaxPathBytes, or with a component
// longer than MaxNameBytes. Every path is cleaned before it touches a tree.
func CleanPath(p string) (string, error) {
	if !utf8.ValidString(p) {
		return "", fmt.Errorf("%w: path %q is not valid UTF-8", ErrInvalidPath, p)
	}
	if len(p) > MaxPathBytes {
		return "", fmt.Errorf("%w: path is %d bytes long; the limit is %d", ErrInvalidPath, len(p), MaxPathBytes)
	}
	c, err := effects.CleanWorkspacePath(p)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidPath, err)
	}
	if c == "" {
		return "", nil
	}
	for part := range strings.SplitSeq(c, "/") {
		if len(part) > MaxNameBytes {
			return "", fmt.Errorf("%w: path component %.40q... is %d bytes long; the limit is %d", ErrInvalidPath, part, len(part), MaxNameBytes)
		}
	}
	return c, nil
}

// validName reports whether name can be an entry of a tree node.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= MaxNameBytes &&
		utf8.ValidString(name) && !strings.ContainsAny(name, "/\\\x00")
}

// splitPath splits a clean path into its components; the root has none.
func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// joinPath joins a directory path and a name.
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// comparePaths orders clean paths component by component: the order of a
// depth-first walk that visits a directory before its entries and entries
// sorted by name. It returns -1, 0 or +1.
func comparePaths(a, b string) int {
	for {
		ai, bi := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
		ah, bh := a, b
		if ai >= 0 {
			ah = a[:ai]
		}
		if bi >= 0 {
			bh = b[:bi]
		}
		if c := strings.Compare(ah, bh); c != 0 {
			return c
		}
		switch {
		case ai < 0 && bi < 0:
			return 0
		case ai < 0:
			return -1
		case bi < 0:
			return 1
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}

// isAncestor reports whether dir is a proper ancestor of p (the root is
// the ancestor of every other path).
func isAncestor(dir, p string) bool {
	if dir == "" {
		return p != ""
	}
	return len(p) > len(dir) && strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}

// pathErr wraps err in a *PathError unless it already is one.
func pathErr(op, p string, err error) error {
	if _, ok := errors.AsType[*PathError](err); ok {
		return err
	}
	return &PathError{Op: op, Path: p, Err: err}
}
