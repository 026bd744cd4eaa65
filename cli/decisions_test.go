package cli

import (
	"context"
	"errors"
	"testing"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// TestDecisionsOnePerCall: a call gets one decision, the terminal's or
// another process's, whichever is claimed first; the other side learns
// what came of it.
func TestDecisionsOnePerCall(t *testing.T) {
	d := newDecisions()
	end := d.followTurn()

	// Another process first: the approver takes its decision, the
	// terminal's answer is not used, and the sender learns the record.
	h := &handoff{a: store.Approval{Call: "c1", Approve: true, PID: 7}, done: make(chan handoffResult, 1)}
	d.handed["c1"] = h
	if d.answered("c1") {
		t.Error("the terminal claimed a call another process had decided")
	}
	if got, ok := d.take("c1"); !ok || !got.Approve {
		t.Errorf("take: %+v, %v; want the other process's approval", got, ok)
	}
	if _, ok := d.take("c1"); ok {
		t.Error("a decision was taken twice")
	}
	if pid, elsewhere := d.decided(agent.ApprovalDecided{Seq: 9, CallID: "c1", Tool: "bash", Approved: true}); !elsewhere || pid != 7 {
		t.Errorf("decided: pid %d, %v; want 7 from elsewhere", pid, elsewhere)
	}
	if res := <-h.done; res.err != nil || res.res.Seq != 9 || res.res.Tool != "bash" {
		t.Errorf("the sender learned %+v", res)
	}

	// The terminal first: a decision handed over later is told so when
	// the turn journals the terminal's.
	if !d.answered("c2") {
		t.Error("the terminal could not claim a call nobody had decided")
	}
	h2 := &handoff{a: store.Approval{Call: "c2", PID: 8}, done: make(chan handoffResult, 1)}
	d.handed["c2"] = h2
	if _, elsewhere := d.decided(agent.ApprovalDecided{Seq: 10, CallID: "c2", Tool: "bash", Approved: true}); elsewhere {
		t.Error("the terminal's decision was shown as another process's")
	}
	if res := <-h2.done; !errors.Is(res.err, store.ErrNotWaiting) {
		t.Errorf("the later sender learned %+v; want ErrNotWaiting", res)
	}

	// Taken, but the turn ended before it journaled it.
	h3 := &handoff{a: store.Approval{Call: "c3", PID: 9}, done: make(chan handoffResult, 1)}
	d.handed["c3"] = h3
	d.take("c3")
	end(context.Background(), nil, errors.New("stopped"))
	if res := <-h3.done; res.err == nil {
		t.Error("a decision the turn never journaled was reported journaled")
	}
}
