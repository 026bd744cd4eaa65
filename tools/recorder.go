package tools

import (
	"context"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
)

// Commit is a new version of a workspace that a tool call made. The world
// records it (as a sys/WorkspaceCommit@1 event) when the call's receipt
// comes back.
type Commit struct {
	Workspace string
	// ExpectedHead is the version the commit was made on; 0 for the first.
	ExpectedHead uint64
	// Version is the version the commit makes: ExpectedHead + 1.
	Version uint64
	Root    cas.Ref
	Owner   string
}

// SubCall is one tool call made inside another, such as a command of a
// bash script.
type SubCall struct {
	Seq       uint64
	Tool      string
	Arguments string // JSON
	ExitCode  int
	Error     string
	Duration  time.Duration
}

// Recorder collects what a tool call did in the world besides its output:
// the workspace commits it made and the tools it called. The adapter that
// runs a tool for a world puts one in the call's context; tools add to it.
// It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	commits []Commit
	calls   []SubCall
}

type recorderKey struct{}

// WithRecorder returns a context carrying r.
func WithRecorder(ctx context.Context, r *Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

// RecorderFrom returns the recorder in ctx, or nil: a tool run outside a
// world records nothing, and the methods of a nil *Recorder do nothing.
func RecorderFrom(ctx context.Context) *Recorder {
	r, _ := ctx.Value(recorderKey{}).(*Recorder)
	return r
}

// AddCommit records a workspace commit.
func (r *Recorder) AddCommit(c Commit) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, c)
}

// AddCall records a sub-call.
func (r *Recorder) AddCall(c SubCall) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// Commits returns the commits recorded, in the order they were made.
func (r *Recorder) Commits() []Commit {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Commit(nil), r.commits...)
}

// Calls returns the sub-calls recorded, in the order they were recorded.
func (r *Recorder) Calls() []SubCall {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]SubCall(nil), r.calls...)
}
