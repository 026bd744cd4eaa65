package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestSendApproval: a decision another process sends reaches the handler
// the writer registered, with the sender's process id; its result and
// its errors come back as the handler gave them; without a handler, or
// without a writer, the sender is told so.
func TestSendApproval(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, dir, &Options{NoSync: true})
	ctx := t.Context()
	a := Approval{World: "w", Chat: "main", Call: "call_1", Approve: true, Reason: "fine"}

	if _, err := SendApproval(ctx, dir, a); !errors.Is(err, ErrNoApprovals) {
		t.Errorf("SendApproval with no handler: %v; want ErrNoApprovals", err)
	}

	var mu sync.Mutex
	var got []Approval
	if err := w.HandleApprovals(func(_ context.Context, a Approval) (ApprovalResult, error) {
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
		switch a.Call {
		case "call_done":
			return ApprovalResult{}, fmt.Errorf("%w: call call_done was approved at the terminal; calls that wait: call_1", ErrNotWaiting)
		case "call_other":
			return ApprovalResult{}, fmt.Errorf("%w: process 1 runs world v", ErrNotRunning)
		case "call_fire":
			return ApprovalResult{}, errors.New("disk on fire")
		}
		return ApprovalResult{Tool: "bash", Seq: 42}, nil
	}); err != nil {
		t.Fatal(err)
	}
	res, err := SendApproval(ctx, dir, a)
	if err != nil {
		t.Fatalf("SendApproval: %v", err)
	}
	if want := (ApprovalResult{Tool: "bash", Seq: 42, Writer: os.Getpid()}); res != want {
		t.Errorf("SendApproval: %+v; want %+v", res, want)
	}
	mu.Lock()
	if len(got) != 1 {
		t.Fatalf("the handler was called %d times; want 1", len(got))
	}
	want := a
	if runtime.GOOS == "linux" {
		want.PID = os.Getpid() // the peer's credentials
	}
	if got[0] != want {
		t.Errorf("the handler got %+v; want %+v", got[0], want)
	}
	mu.Unlock()

	for _, tc := range []struct {
		call string
		is   error
		msg  string
	}{
		{"call_done", ErrNotWaiting, "approved at the terminal; calls that wait: call_1"},
		{"call_other", ErrNotRunning, "runs world v"},
		{"call_fire", nil, "disk on fire"},
	} {
		b := a
		b.Call = tc.call
		_, err := SendApproval(ctx, dir, b)
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.call)
		case tc.is != nil && !errors.Is(err, tc.is):
			t.Errorf("%s: %v; want %v", tc.call, err, tc.is)
		case !strings.Contains(err.Error(), tc.msg):
			t.Errorf("%s: %q; want the handler's message %q", tc.call, err, tc.msg)
		}
	}

	for _, bad := range []Approval{
		{World: "w", Chat: "main"},
		{World: "", Chat: "main", Call: "c"},
		{World: "w", Call: "c"},
		{World: "w", Chat: "main", Call: "c", Reason: "\xff"},
	} {
		if _, err := SendApproval(ctx, dir, bad); err == nil {
			t.Errorf("SendApproval(%+v): no error", bad)
		}
	}

	if err := w.HandleApprovals(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := SendApproval(ctx, dir, a); !errors.Is(err, ErrNoApprovals) {
		t.Errorf("SendApproval after the handler was removed: %v; want ErrNoApprovals", err)
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := SendApproval(ctx, dir, a); !errors.Is(err, ErrNoWriter) {
		t.Errorf("SendApproval with no writer: %v; want ErrNoWriter", err)
	}
	r := mustOpen(t, dir, &Options{ReadOnly: true})
	if err := r.HandleApprovals(func(context.Context, Approval) (ApprovalResult, error) { return ApprovalResult{}, nil }); err == nil {
		t.Error("HandleApprovals on a store opened read-only: no error")
	}
}

// TestApprovalServerChecks: the writer refuses what is not a decision
// before its handler sees it.
func TestApprovalServerChecks(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, dir, &Options{NoSync: true})
	called := false
	if err := w.HandleApprovals(func(context.Context, Approval) (ApprovalResult, error) {
		called = true
		return ApprovalResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	r, err := dialWriter(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	for _, body := range []string{
		`{"world": "w", "chat": "main", "call": "c", "approve": true, "always": true}`,
		`{"world": "w", "chat": "main"}`,
		`not json`,
	} {
		resp, err := r.hc.Post("http://demiurge/v1/approval", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("POST %s: %s; want 400", body, resp.Status)
		}
	}
	if called {
		t.Error("the handler was called with a request that is not a decision")
	}
}
