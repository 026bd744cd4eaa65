package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// decisions are the decisions on this run's calls that other processes
// send (demiurge approve beside this run, through the store's socket),
// kept so that each call gets one decision: the terminal's or another
// process's, whichever comes first.
//
// While a turn of the run's chat is followed here and the terminal is
// asked (--approve ask), a decision from elsewhere is handed to the
// approver, which stops its question and returns it: the turn journals
// it as it would the terminal's answer. While run on a pipe waits for its
// next line, it is handed to that loop, which journals it as Chat.Decide
// does and shows the rest of the turn. Otherwise (another chat of the
// world, --json at a terminal) it is journaled at once
// (agent.Chat.Answer) and the world goes on with the turn by itself. Where the question cannot be stopped (the terminal cannot
// be read with a deadline: not Linux), a decision for a call asked about
// is refused, to keep one decision per call.
type decisions struct {
	mu        sync.Mutex
	following bool                // a turn of the run's chat is followed (chatRun.turn)
	idle      bool                // run waits for its input and takes decisions meanwhile (chatRun.pipe)
	handed    map[string]*handoff // by call: decisions from elsewhere for the approver
	local     map[string]bool     // calls answered at this terminal
	from      map[string]int      // calls decided by another process: its id
	wake      chan struct{}       // a decision was handed over
}

// handoff is a decision another process sent, waiting for the approver.
type handoff struct {
	a     store.Approval
	taken bool // the approver returned it; the turn journals it
	done  chan handoffResult
}

type handoffResult struct {
	res store.ApprovalResult
	err error
}

func newDecisions() *decisions {
	return &decisions{handed: map[string]*handoff{}, local: map[string]bool{}, from: map[string]int{}, wake: make(chan struct{}, 1)}
}

// finish resolves h with res and err.
func (h *handoff) finish(res store.ApprovalResult, err error) {
	select {
	case h.done <- handoffResult{res, err}:
	default:
	}
}

// remoteDecision journals a decision another process sent through the
// store's socket (store.ApprovalHandler): see decisions.
func (r *chatRun) remoteDecision(ctx context.Context, a store.Approval) (store.ApprovalResult, error) {
	if a.World != r.w.Name() {
		return store.ApprovalResult{}, fmt.Errorf("%w: process %d (demiurge run) runs world %s of store %s, not world %s; answer once it has stopped (demiurge approve then opens the store itself)",
			store.ErrNotRunning, os.Getpid(), r.w.Name(), r.a.storeName(), a.World)
	}
	chat := r.w.Chat(a.Chat)
	if _, ok := chat.State(); !ok {
		return store.ApprovalResult{}, fmt.Errorf("%w: world %s has no chat %s (process %d runs chat %s)", store.ErrNotRunning, a.World, a.Chat, os.Getpid(), r.f.chat)
	}
	pending := chat.Pending(ctx)
	waits := false
	for _, p := range pending {
		waits = waits || p.CallID == a.Call
	}
	if !waits {
		return store.ApprovalResult{}, notWaiting(a, pending, "")
	}
	d := agent.Decision{Approve: a.Approve, Reason: a.Reason}
	dec := r.dec
	dec.mu.Lock()
	switch {
	case a.Chat == r.f.chat && dec.local[a.Call]:
		dec.mu.Unlock()
		return store.ApprovalResult{}, notWaiting(a, nil, fmt.Sprintf("it was answered at the terminal of process %d", os.Getpid()))
	case dec.handed[a.Call] != nil && a.Chat == r.f.chat:
		other := dec.handed[a.Call].a.PID
		dec.mu.Unlock()
		return store.ApprovalResult{}, notWaiting(a, nil, fmt.Sprintf("process %d's decision on it is being journaled", other))
	case a.Chat == r.f.chat && dec.idle:
		return r.handOver(ctx, a)
	case a.Chat == r.f.chat && dec.following && r.asks() && r.input == nil:
		dec.mu.Unlock()
		return store.ApprovalResult{}, fmt.Errorf("%w: process %d asks about the calls of chat %s at its terminal, and on this system cannot stop asking: answer there",
			store.ErrNoApprovals, os.Getpid(), a.Chat)
	case a.Chat == r.f.chat && dec.following && r.asks():
		return r.handOver(ctx, a)
	}
	if a.Chat == r.f.chat {
		dec.from[a.Call] = a.PID
	}
	dec.mu.Unlock()
	ar, head, err := chat.Answer(ctx, a.Call, d)
	if err != nil {
		dec.mu.Lock()
		delete(dec.from, a.Call)
		dec.mu.Unlock()
		if errors.Is(err, agent.ErrNotWaiting) {
			return store.ApprovalResult{}, notWaiting(a, chat.Pending(ctx), "")
		}
		return store.ApprovalResult{}, fmt.Errorf("process %d: journal the decision on call %s of chat %s: %w", os.Getpid(), a.Call, a.Chat, err)
	}
	if !r.termIn { // at a terminal the line editor may be waiting at its prompt: say nothing over it
		r.note(fmt.Sprintf("%s; the world goes on with its turn", decidedLine(ar.Tool, a.Approve, a.Reason, a.PID)))
	}
	return store.ApprovalResult{Tool: ar.Tool, Seq: head.Seq}, nil
}

// handOver hands a decision to the approver, or to the input loop (the
// caller holds r.dec.mu, which it releases), and waits for what the turn
// did with it.
func (r *chatRun) handOver(ctx context.Context, a store.Approval) (store.ApprovalResult, error) {
	dec := r.dec
	h := &handoff{a: a, done: make(chan handoffResult, 1)}
	dec.handed[a.Call] = h
	dec.mu.Unlock()
	select {
	case dec.wake <- struct{}{}:
	default:
	}
	select {
	case res := <-h.done:
		return res.res, res.err
	case <-ctx.Done():
		dec.mu.Lock()
		if !h.taken && dec.handed[a.Call] == h {
			delete(dec.handed, a.Call)
		}
		dec.mu.Unlock()
		return store.ApprovalResult{}, ctx.Err()
	}
}

// notWaiting is the error of a decision on a call that does not wait:
// why, if known, else the calls that do.
func notWaiting(a store.Approval, pending []agent.ApprovalRequested, why string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "call %s of chat %s in world %s", a.Call, a.Chat, a.World)
	switch {
	case why != "":
		b.WriteString(": " + why)
	case len(pending) == 0:
		fmt.Fprintf(&b, "; no call of chat %s waits for approval", a.Chat)
	default:
		b.WriteString("; calls that wait:")
		for _, p := range pending {
			fmt.Fprintf(&b, " %s (%s)", p.CallID, p.Tool)
		}
	}
	return fmt.Errorf("%w: %s", store.ErrNotWaiting, b.String())
}

// decidedLine says that a call was decided by another process.
func decidedLine(tool string, approved bool, reason string, pid int) string {
	mark, verb := "✓", "approved"
	if !approved {
		mark, verb = "✗", "denied"
	}
	who := "another process"
	if pid != 0 {
		who = fmt.Sprintf("another process (pid %d)", pid)
	}
	s := fmt.Sprintf("%s %s %s from %s", mark, tool, verb, who)
	if !approved && reason != "" {
		s += ": " + reason
	}
	return s
}

// asks reports whether calls that wait are asked about at the terminal.
func (r *chatRun) asks() bool {
	return r.f.approve == "ask" && r.termIn && !r.f.json
}

// following marks the start of a turn followed here; the function it
// returns marks its end, after which decisions handed over for it that
// the approver did not take are journaled as any other, and those it
// took but the turn did not journal fail with err.
func (d *decisions) followTurn() func(ctx context.Context, r *chatRun, err error) {
	d.mu.Lock()
	d.following = true
	d.mu.Unlock()
	return func(ctx context.Context, r *chatRun, err error) {
		d.mu.Lock()
		d.following = false
		left := d.handed
		d.handed = map[string]*handoff{}
		d.mu.Unlock()
		for call, h := range left {
			if h.taken {
				if errors.Is(err, agent.ErrNotWaiting) {
					h.finish(store.ApprovalResult{}, notWaiting(h.a, nil, "it no longer waited when process "+strconv.Itoa(os.Getpid())+" took the decision"))
					continue
				}
				why := "the turn ended before it was journaled"
				if err != nil {
					why += ": " + err.Error()
				}
				h.finish(store.ApprovalResult{}, fmt.Errorf("process %d took the decision on call %s, but %s", os.Getpid(), call, why))
				continue
			}
			d.mu.Lock()
			d.from[call] = h.a.PID
			d.mu.Unlock()
			ar, head, aerr := r.w.Chat(h.a.Chat).Answer(context.WithoutCancel(ctx), call, agent.Decision{Approve: h.a.Approve, Reason: h.a.Reason})
			if aerr != nil {
				if errors.Is(aerr, agent.ErrNotWaiting) {
					aerr = notWaiting(h.a, nil, "the turn ended before it was asked")
				}
				h.finish(store.ApprovalResult{}, aerr)
				continue
			}
			h.finish(store.ApprovalResult{Tool: ar.Tool, Seq: head.Seq}, nil)
		}
	}
}

// take returns the decision another process sent for call, if one waits
// for the approver, and marks it taken: the turn journals it.
func (d *decisions) take(call string) (agent.Decision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.handed[call]
	if h == nil || h.taken {
		return agent.Decision{}, false
	}
	h.taken = true
	d.from[call] = h.a.PID
	return agent.Decision{Approve: h.a.Approve, Reason: h.a.Reason}, true
}

// setIdle says whether run waits for its input, taking decisions of
// other processes meanwhile.
func (d *decisions) setIdle(idle bool) {
	d.mu.Lock()
	d.idle = idle
	d.mu.Unlock()
}

// takeAny takes a decision another process sent that nobody took yet.
func (d *decisions) takeAny() (string, agent.Decision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for call, h := range d.handed {
		if !h.taken {
			h.taken = true
			d.from[call] = h.a.PID
			return call, agent.Decision{Approve: h.a.Approve, Reason: h.a.Reason}, true
		}
	}
	return "", agent.Decision{}, false
}

// answered claims call for the terminal's answer; false if another
// process's decision came first.
func (d *decisions) answered(call string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.handed[call] != nil {
		return false
	}
	d.local[call] = true
	return true
}

// decided notes that the turn journaled a decision on call: a decision
// from another process that was handed over learns what came of it. It
// returns the id of the process the decision came from, and whether it
// came from another.
func (d *decisions) decided(e agent.ApprovalDecided) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h := d.handed[e.CallID]; h != nil {
		delete(d.handed, e.CallID)
		if h.taken {
			h.finish(store.ApprovalResult{Tool: e.Tool, Seq: e.Seq}, nil)
		} else {
			verb := "approved"
			if !e.Approved {
				verb = "denied"
			}
			h.finish(store.ApprovalResult{}, notWaiting(h.a, nil, fmt.Sprintf("process %d %s it first", os.Getpid(), verb)))
		}
	}
	delete(d.local, e.CallID)
	pid, ok := d.from[e.CallID]
	delete(d.from, e.CallID)
	return pid, ok
}
