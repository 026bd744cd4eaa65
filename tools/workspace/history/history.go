// Package history is the data model of a workspace's versions as a world
// records them: the state of the built-in reducer sys/Workspace@1
// (sys/WorkspaceHistory@1), the commits it records (sys/WorkspaceCommit@1)
// and the rule for workspace names.
//
// It sits below both of its users: the reducer that records versions
// (reducer/builtin) and the tools that make them (tools/workspace).
package history

import (
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// Names of the workspace module and its schemas.
const (
	Module        = "sys/Workspace@1"
	HistorySchema = "sys/WorkspaceHistory@1" // the state
	CommitSchema  = "sys/WorkspaceCommit@1"  // the event
	NameSchema    = "sys/WorkspaceName@1"    // the key
)

// MaxWaiting bounds how far ahead of the latest version a commit may be
// and still wait for the versions before it.
const MaxWaiting = 1024

// MaxName bounds the length of a workspace name.
const MaxName = 255

// CommitMeta is the Go form of sys/WorkspaceCommitMeta@1.
type CommitMeta struct {
	RootHash cas.Ref `cbor:"root_hash"`
	Owner    string  `cbor:"owner"`
	// CreatedAt is the logical time (nanoseconds since the Unix epoch) of
	// the input that recorded the commit.
	CreatedAt int64 `cbor:"created_at"`
}

// History is the Go form of sys/WorkspaceHistory@1, the state of a
// workspace's cell.
//
// Latest is the newest version n such that versions 1..n are all
// recorded. Versions may also hold entries above Latest: commits that came
// before the commits they were made on, waiting for the gap to fill (see
// reducer/builtin.WorkspaceReducer). Version returns only recorded
// versions.
type History struct {
	Latest   uint64                `cbor:"latest"`
	Versions map[uint64]CommitMeta `cbor:"versions"`
}

// Version returns a recorded version (1..Latest).
func (h *History) Version(v uint64) (CommitMeta, bool) {
	if v == 0 || v > h.Latest {
		return CommitMeta{}, false
	}
	m, ok := h.Versions[v]
	return m, ok
}

// Waiting returns how many commits wait above Latest.
func (h *History) Waiting() int {
	n := 0
	for v := range h.Versions {
		if v > h.Latest {
			n++
		}
	}
	return n
}

// Commit is the Go form of sys/WorkspaceCommit@1.
type Commit struct {
	Workspace string `cbor:"workspace"`
	// ExpectedHead is the version the commit was made on; nil applies it
	// on whatever is latest (AgentOS's meaning of an absent expected_head).
	ExpectedHead *uint64    `cbor:"expected_head"`
	Meta         CommitMeta `cbor:"meta"`
}

// Decode decodes a sys/WorkspaceHistory@1 value; nil is the empty
// history.
func Decode(v schema.Value) (History, error) {
	h := History{}
	if v != nil {
		if err := schema.WithEncoding(v, func(b []byte) error { return cas.Unmarshal(b, &h) }); err != nil {
			return History{}, fmt.Errorf("decode %s %s: %w", HistorySchema, Clip(schema.String(v)), err)
		}
	}
	if h.Versions == nil {
		h.Versions = map[uint64]CommitMeta{}
	}
	return h, nil
}

// DecodeCommit decodes a sys/WorkspaceCommit@1 value.
func DecodeCommit(v schema.Value) (Commit, error) {
	var c Commit
	if err := schema.WithEncoding(v, func(b []byte) error { return cas.Unmarshal(b, &c) }); err != nil {
		return Commit{}, fmt.Errorf("decode %s %s: %w", CommitSchema, Clip(schema.String(v)), err)
	}
	return c, nil
}

// Value returns h as a sys/WorkspaceHistory@1 value.
func (h *History) Value() (schema.Value, error) {
	if h.Versions == nil {
		h.Versions = map[uint64]CommitMeta{}
	}
	b, err := cas.Marshal(h)
	if err != nil {
		return nil, err
	}
	return schema.Decode(b)
}

// ValidName reports whether name can name a workspace: 1 to 255
// characters out of A-Z a-z 0-9 . _ ~ - (AgentOS's rule, with a length
// limit).
func ValidName(name string) bool {
	if name == "" || len(name) > MaxName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '~' || c == '-') {
			return false
		}
	}
	return true
}

// Clip shortens s to 200 bytes for an error message.
func Clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
