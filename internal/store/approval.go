package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/journal"
)

// Errors of decisions sent to the process that writes a store (see
// "Decisions from other processes" in the package documentation). The
// writer's handler wraps the last two; SendApproval rebuilds them so that
// errors.Is sees them in the sending process.
var (
	// ErrNoApprovals is returned (wrapped) by SendApproval when the
	// process that writes the store takes no decisions: it runs no world
	// that asks for approval (a command that only writes, say), or it is
	// a demiurge older than this one.
	ErrNoApprovals = errors.New("store: the writer takes no decisions on approvals")
	// ErrNotWaiting is returned (wrapped) when the call the decision is
	// for does not wait for approval: decided already, in a turn that
	// ended, or unknown.
	ErrNotWaiting = errors.New("store: the call does not wait for approval")
	// ErrNotRunning is returned (wrapped) when the writer does not run the
	// world (or the chat) the decision is for.
	ErrNotRunning = errors.New("store: the writer does not run that world")
)

// Approval is a user's decision on a tool call that waits for approval,
// as another process sends it to the process that writes the store and
// runs the world (SendApproval). The store carries it and does not read
// it: the handler of the process that runs the world does.
type Approval struct {
	World   string `json:"world"`
	Chat    string `json:"chat"`
	Call    string `json:"call"`
	Approve bool   `json:"approve"`
	// Reason is why: what the model reads of a denial.
	Reason string `json:"reason,omitempty"`
	// PID is the process that sent the decision, as the socket's peer
	// credentials say (0 where the system does not say). The writer sets
	// it; what the sender puts there is ignored.
	PID int `json:"-"`
}

// Limits of an Approval on the wire.
const (
	maxApprovalID     = 1 << 10
	maxApprovalReason = 64 << 10
)

// check reports the first field of a that the writer cannot take.
func (a Approval) check() error {
	if err := journal.ValidateWorld(a.World); err != nil {
		return invalidf("%v", err)
	}
	for _, f := range []struct{ name, v string }{{"chat", a.Chat}, {"call", a.Call}} {
		if f.v == "" || len(f.v) > maxApprovalID || !utf8.ValidString(f.v) {
			return invalidf("the %s id %q is empty, too long or not UTF-8", f.name, f.v)
		}
	}
	if len(a.Reason) > maxApprovalReason || !utf8.ValidString(a.Reason) {
		return invalidf("the reason is longer than %d bytes or not UTF-8", maxApprovalReason)
	}
	return nil
}

// ApprovalResult is what the writer did with an Approval.
type ApprovalResult struct {
	// Tool is the tool of the call decided.
	Tool string `json:"tool,omitempty"`
	// Seq is the journal record of the decision's step (0 if not known).
	Seq uint64 `json:"seq,omitempty"`
	// Writer is the id of the process that journaled it (SendApproval
	// sets it).
	Writer int `json:"writer,omitempty"`
}

// ApprovalHandler journals a decision another process sent, in a world
// the process that writes the store runs, and says what it did. It is
// called on the server's goroutine for the request, possibly several at
// once; ctx ends when the sender goes away or the store closes. Its error
// goes back to the sender: wrap ErrNotWaiting or ErrNotRunning for what
// they say, so that the sender sees them; its message is shown as it is.
type ApprovalHandler func(ctx context.Context, a Approval) (ApprovalResult, error)

// HandleApprovals makes h the handler of the decisions other processes
// send this store's writer (SendApproval); nil removes it, after which
// they are refused with ErrNoApprovals, as before any handler. Only the
// process that runs the world should set one: the decision is journaled
// by the world's single writer, this process, through h. It returns
// s.Serving()'s error if the store serves no socket (read-only, say).
func (s *Store) HandleApprovals(h ApprovalHandler) error {
	if err := s.Serving(); err != nil {
		return err
	}
	s.srv.approvals.Store(&h)
	return nil
}

// peerPIDKey is the context key of the process id of a request's peer.
type peerPIDKey struct{}

// withPeer adds the process id of c's peer to ctx, for the approval
// handler (http.Server.ConnContext).
func withPeer(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerPIDKey{}, peerPID(c))
}

// approval takes a decision another process sends: POST /v1/approval with
// an Approval in JSON; the answer is an ApprovalResult, or a wireError.
func (sv *server) approval(w http.ResponseWriter, r *http.Request) {
	h := sv.approvals.Load()
	if h == nil || *h == nil {
		writeError(w, fmt.Errorf("%w: process %d writes the store but runs no world that takes decisions from other processes (it is not a demiurge run)", ErrNoApprovals, sv.pid))
		return
	}
	var a Approval
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		writeError(w, invalidf("the decision does not decode: %v", err))
		return
	}
	if err := a.check(); err != nil {
		writeError(w, err)
		return
	}
	a.PID, _ = r.Context().Value(peerPIDKey{}).(int)
	res, err := (*h)(r.Context(), a)
	if err != nil {
		writeError(w, err)
		return
	}
	res.Writer = sv.pid
	writeJSON(w, res)
}

// SendApproval sends a decision on a call that waits for approval to the
// process that writes the store in dir, which journals it in the world it
// runs and goes on with the turn there (see "Decisions from other
// processes"). It returns what that process did, or:
//   - an error wrapping ErrNoWriter if no process serves the store (the
//     caller may then open the store and journal the decision itself);
//   - one wrapping ErrNoApprovals if the writer takes no decisions;
//   - one wrapping ErrNotWaiting or ErrNotRunning, as its handler said;
//   - one wrapping ErrWriterGone if it stopped before answering (the
//     decision may or may not have been journaled: look at the journal).
func SendApproval(ctx context.Context, dir string, a Approval) (ApprovalResult, error) {
	if err := a.check(); err != nil {
		return ApprovalResult{}, err
	}
	r, err := dialWriter(ctx, dir)
	if err != nil {
		return ApprovalResult{}, err
	}
	defer r.close()
	return r.approve(ctx, a)
}

func (r *remote) approve(ctx context.Context, a Approval) (ApprovalResult, error) {
	body, err := json.Marshal(a)
	if err != nil {
		return ApprovalResult{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://demiurge/v1/approval", bytes.NewReader(body))
	if err != nil {
		return ApprovalResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ApprovalResult{}, ctx.Err()
		}
		return ApprovalResult{}, r.gone(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		if ctx.Err() != nil {
			return ApprovalResult{}, ctx.Err()
		}
		return ApprovalResult{}, r.gone(err)
	}
	if resp.StatusCode != http.StatusOK {
		var we wireError
		if err := json.Unmarshal(b, &we); err != nil || we.Kind == "" {
			if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
				// A writer older than decisions over the socket.
				return ApprovalResult{}, fmt.Errorf("%w: process %d writes store %s with an older demiurge", ErrNoApprovals, r.pid, r.dir)
			}
			return ApprovalResult{}, r.gone(fmt.Errorf("approval: %s", resp.Status))
		}
		return ApprovalResult{}, r.fromWire(we)
	}
	var res ApprovalResult
	if err := json.Unmarshal(b, &res); err != nil {
		return ApprovalResult{}, r.gone(fmt.Errorf("approval: %w", err))
	}
	res.Writer = r.pid
	return res, nil
}
